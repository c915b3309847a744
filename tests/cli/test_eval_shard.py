"""``eval --shard K/N``: each runner evaluates its share; the shares' predictions together are the
whole set's, row for row."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main as cli
from harness.inputs.synthetic import Recipe, write_dataset


def test_the_shares_predictions_together_are_the_whole_sets(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_dataset(tmp_path / "syn", Recipe(seed=5, train=0, val=7, calib=0))
    argv = ["eval", "--dataset", str(tmp_path / "syn")]
    assert cli.main([*argv, "--no-cache", "--save-predictions", str(tmp_path / "all.json")]) == 0
    rows = []
    for index in (1, 2, 3):
        saved = tmp_path / f"share-{index}.json"
        own = ["--cache", str(tmp_path / f"cache-{index}")]  # each runner infers its share into its own cache
        assert cli.main([*argv, *own, "--shard", f"{index}/3", "--save-predictions", str(saved)]) == 0
        out = capsys.readouterr()
        assert f"shard {index}/3: {3 if index == 1 else 2} of 7 images" in out.err
        rows += json.loads(saved.read_text())
    whole = json.loads((tmp_path / "all.json").read_text())
    assert whole and sorted(rows, key=_row) == sorted(whole, key=_row)


def _row(row: dict[str, Any]) -> tuple[Any, ...]:
    return (str(row["image_id"]), -row["score"], row["category_id"], row["bbox"])
