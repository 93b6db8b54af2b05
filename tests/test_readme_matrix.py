"""The README's matrix table is generated from the manifests; it must not drift."""
import re

import yaml

from conftest import ROOT


def matrix_rows() -> list[str]:
    rows = []
    for manifest in sorted((ROOT / "presets").glob("*/preset.yaml")):
        m = yaml.safe_load(manifest.read_text())
        t = m["topology"]
        images = ", ".join(f"`{v}`" for v in m["container"]["images"].values())
        rows.append(f"| [{m['name']}](presets/{m['name']}/) | {t['arch']} | {t['gpu']['per_node']} | "
                    f"{t['gpu']['memory_gib']} GiB | {t['network']['fabric']} | {t['network']['ib_ports_per_node']} | "
                    f"{m['nodes']['min']}-{m['nodes']['max']} | {images} |")
    return rows


def test_readme_matrix_matches_manifests():
    text = (ROOT / "README.md").read_text()
    block = re.search(r"<!-- matrix:begin.*?-->\n(.*?)<!-- matrix:end -->", text, re.S).group(1)
    table = [line for line in block.strip().splitlines()[2:]]
    assert table == matrix_rows()
