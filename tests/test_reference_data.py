"""The published reference data shipped in data/reference/ (index: data/reference/README.md)."""

import re
from pathlib import Path

import numpy as np
import pytest

from replica.workflow import plotting, reference

ROOT = Path(__file__).resolve().parents[1] / "data" / "reference"
FILES = sorted(str(p.relative_to(ROOT)) for p in ROOT.rglob("*.csv"))
REQUIRED = ("paper", "repository", "file", "content", "columns", "normalization", "accuracy")


def test_reference_files_exist():
    assert len(FILES) >= 20


@pytest.mark.parametrize("name", FILES)
def test_every_file_has_a_complete_header_and_numeric_rows(name):
    table = reference.read(name)
    for key in REQUIRED:
        assert table.meta.get(key), (name, key)
    if table.meta["repository"].startswith("none"):
        # constants quoted from the pre-arXiv literature: a journal or book reference with its year
        assert "published constants" in table.meta["repository"], name
        assert re.search(r"\((19|20)\d\d\)", table.meta["paper"]), name
    else:
        assert table.meta["repository"].startswith("https://github.com/"), name
        assert "arXiv" in table.meta["paper"], name
    lengths = {len(v) for v in table.columns.values()}
    assert len(lengths) == 1 and lengths.pop() > 0
    assert all(np.all(np.isfinite(v)) for v in table.columns.values())


def test_index_lists_every_file():
    index = (ROOT / "README.md").read_text()
    patterns = [re.escape(p).replace(r"<", "<").replace(r">", ">")
                for p in re.findall(r"`([\w./<>κ-]+\.csv|[\w./-]+\*\.csv)`", index)]
    regexes = [re.compile(re.sub(r"<[^>]+>", r"[^/]+", p.replace(r"\*", ".*")) + "$") for p in patterns]
    for name in FILES:
        assert any(r.match(name) for r in regexes), name


def test_plot_reference_reader_skips_the_header():
    ref = plotting.read_reference(str(reference.path(
        "barbier2025_shallow/hmc_relu_delta0.1_gamma0.5_readout_ones_d150.csv")) + ":info_mean:info_std")
    assert ref["alpha"][0] == 0.5 and ref["value"][0] == pytest.approx(0.05874311)
    assert ref["error"][0] == pytest.approx(0.00061025395)


def test_missing_reference_file_is_a_clear_error():
    with pytest.raises(FileNotFoundError, match="available"):
        reference.read("nope.csv")
