"""#SBATCH parsing as sbatch does it."""
from validator.sbatch import parse_script, split_arguments


def test_quotes_escapes_and_comment_cut():
    tokens, cut, open_quote = split_arguments(' --comment="a b" x\\#y --o=\'q r\'  # trailing', 7)
    assert [t.text for t in tokens] == ["--comment=a b", "x#y", "--o=q r"]
    assert cut is not None and not open_quote


def test_parsing_stops_at_first_command_and_skips_comments_and_blanks():
    script = parse_script("#!/bin/bash\n\n# note\n#SBATCH -N 2\nexport A=1\n#SBATCH --time=5\n")
    assert [(o.name, o.value) for o in script.options] == [("nodes", "2")]
    assert script.first_command_line == 5
    assert [d.line for d in script.ignored_directives] == [6]


def test_short_option_forms():
    script = parse_script("#!/bin/bash\n#SBATCH -N2 -t 10 -vQ\n")
    assert [(o.name, o.value) for o in script.options] == [
        ("nodes", "2"), ("time", "10"), ("verbose", None), ("quiet", None)]


def test_getopt_prefix_matching():
    script = parse_script("#!/bin/bash\n#SBATCH --ntasks-per-n=1 --gpus-per=2 --time 5\n")
    problems = [(o.written, o.problem, o.name) for o in script.options]
    assert problems == [("--ntasks-per-n=1", "abbreviated", "ntasks-per-node"),
                        ("--gpus-per=2", "ambiguous", None), ("--time", None, "time")]


def test_option_availability_depends_on_release():
    text = "#!/bin/bash\n#SBATCH --tres-per-task=gres/gpu:1\n"
    assert parse_script(text, release="22.05").options[0].problem == "unavailable"
    assert parse_script(text, release="23.02").options[0].problem is None
