"""The README's matrix table is generated from the manifests (`python -m validator matrix --write`);
it must not drift."""
import json

from conftest import ROOT, run_validator
from validator import catalog


def test_readme_matrix_matches_manifests():
    old, new = catalog.readme_with_matrix(ROOT)
    assert old == new, "run `python -m validator matrix --write`"
    assert run_validator("matrix").returncode == 0


def test_schema_architectures_are_the_catalog_table():
    schema = json.loads((ROOT / "validator" / "schema" / "preset.schema.json").read_text())
    assert schema["properties"]["topology"]["properties"]["arch"]["enum"] == list(catalog.ARCHES)
