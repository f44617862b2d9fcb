"""The heavy-tailed suite's command line (``mtucb_bench.suites.ht_suite``): arguments checked
before any unit runs, one setting per ``--out``, no summary of nothing."""

from __future__ import annotations

import json

import pytest
from usage_errors import assert_usage_error

from mtucb_bench.suites import ht_suite

RUN = ["run", "--methods", "STGP-UCB", "--trials", "1", "--n-init", "3", "--iterations", "2",
       "--workers", "1"]


def _fake_unit(args: tuple[dict, str]) -> str:
    u, out = args
    path = ht_suite.unit_path(ht_suite.Path(out), u)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**u, "simple_regret": [1.0], "cumulative_regret": [1.0],
                                "seconds": [0.1]}))
    return f"done {path.name}"


@pytest.mark.parametrize(("option", "value"), [
    ("--methods", "bogus"), ("--functions", "bogus"), ("--noises", "bogus"), ("--width", "-1"),
    ("--iterations", "0"), ("--trials", "0"), ("--n-init", "1"), ("--workers", "-1"),
])
def test_bad_run_arguments_are_one_line_usage_errors(tmp_path, capsys, option, value):
    assert_usage_error(ht_suite.main, [*RUN, option, value], option, tmp_path / "out", capsys)


def test_run_refuses_an_out_of_other_settings_and_continues_its_own(tmp_path, monkeypatch,
                                                                   capsys):
    monkeypatch.setattr(ht_suite, "_run_unit", _fake_unit)
    out = str(tmp_path / "out")
    ht_suite.main([*RUN, "--out", out])
    (unit,) = (tmp_path / "out").glob("*/*.json")
    before = unit.read_bytes()
    assert "1 of 1 units to run" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_:  # other --iterations / --n-init: refused
        ht_suite.main([*RUN, "--iterations", "4", "--n-init", "5", "--out", out])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "iterations: 2 there, 4 here" in err and "n_init: 3 there, 5 here" in err
    assert unit.read_bytes() == before
    ht_suite.main([*RUN, "--trials", "2", "--out", out])  # the same settings: continued
    assert "1 of 2 units to run" in capsys.readouterr().out
    assert unit.read_bytes() == before


def test_run_refuses_a_folder_of_older_units_with_other_settings(tmp_path, monkeypatch,
                                                                 capsys):
    monkeypatch.setattr(ht_suite, "_run_unit", _fake_unit)
    ht_suite.main([*RUN, "--out", str(tmp_path / "out")])
    (tmp_path / "out" / "suite_settings.json").unlink()  # as written before the file existed
    with pytest.raises(SystemExit) as exit_:
        ht_suite.main([*RUN, "--iterations", "4", "--out", str(tmp_path / "out")])
    assert exit_.value.code == 2 and "iterations 2, 4 here" in capsys.readouterr().err
    ht_suite.main([*RUN, "--out", str(tmp_path / "out")])  # the units' settings: claimed
    assert (tmp_path / "out" / "suite_settings.json").is_file()


@pytest.mark.parametrize("cmd", ["summarize", "diagnose", "target"])
def test_commands_on_an_out_without_units_write_nothing(tmp_path, capsys, cmd):
    (tmp_path / "empty").mkdir()
    for out in (tmp_path / "empty", tmp_path / "missing"):
        with pytest.raises(SystemExit) as exit_:
            ht_suite.main([cmd, "--out", str(out), "--results", str(tmp_path / "res")])
        assert exit_.value.code == 2
        assert capsys.readouterr().err.startswith(f"error: No units under {out}")
    assert not (tmp_path / "res").exists()
