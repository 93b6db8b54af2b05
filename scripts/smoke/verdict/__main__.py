import sys

from smoke.verdict.main import main

sys.exit(main())
