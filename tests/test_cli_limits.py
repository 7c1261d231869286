"""Out-of-domain numbers and unreadable inputs a reviewer tried: one line naming the option (or the key
of the configuration file), exit 2, nothing allocated or written."""

import sys

import pytest

from replica.workflow.cli import plot_main, sweep_main
from replica.workflow.config import LIMITS, UsageError, check_memory
from commands import (experiment_main as _experiment, one_line,
                      sgd_main as _sgd, spectrum_main as _spectrum)


@pytest.mark.parametrize("run, argv, option", [
    (sweep_main, ["--alpha", "1:8:100000000"], "--alpha"),        # was: out of memory
    (sweep_main, ["--alpha", "1e308"], "--alpha"),                # was: ValueError traceback
    (sweep_main, ["--gamma", "1e-300", "--alpha", "1"], "--gamma"),  # was: LinAlgError traceback
    (sweep_main, ["--layers", "2", "--gamma", "1,1e5", "--alpha", "1"], "--gamma"),
    (sweep_main, ["--delta", "1e9"], "--delta"),
    (_spectrum, ["--resolution", "100000"], "--resolution"),      # was: a 74.5 GiB allocation
    (_spectrum, ["--gamma", "0"], "--gamma"),
    (_spectrum, ["--lambda", "0:1:100000", "--density-grid", "100000"], "--lambda/--density-grid"),
    (_sgd, ["--dim", "10000000"], "--dim"),
    (_sgd, ["--lr", "0"], "--lr"),                                 # was accepted
    (_sgd, ["--record-every", "foo"], "--record-every"),
    (_sgd, ["--gamma", "1e5"], "--gamma"),
    (_experiment, ["--alpha", "1e9", "--dim", "100"], "--alpha"),  # was: a PiB allocation
    (_experiment, ["--alpha", "1e6", "--dim", "100"], "--alpha/--dim"),
    (_experiment, ["--gamma", "1e-300"], "--gamma"),
])
def test_out_of_domain_numbers_are_one_line_naming_the_option(tmp_path, capsys, run, argv, option):
    out = tmp_path / "out.h5"
    assert run(argv + ["-o", str(out), "--quiet"]) == 2
    line = one_line(capsys.readouterr().err)
    assert f"error: {option}" in line, line
    assert not out.exists()


def test_target_acceptance_message_names_only_that_option(capsys):
    assert _experiment(["--target-acceptance", "2", "--quiet"]) == 2
    line = one_line(capsys.readouterr().err)
    assert "--target-acceptance" in line and "step" not in line


def test_plot_dpi_is_bounded(tmp_path, capsys):
    assert plot_main([str(tmp_path / "missing.h5"), "--dpi", "100000"]) == 2
    assert "--dpi" in one_line(capsys.readouterr().err)


def test_check_memory_compares_with_the_machine():
    check_memory(1024.0, "--x", "a kilobyte")          # always fits
    with pytest.raises(UsageError, match=r"^--x: .* need .*more than half"):
        check_memory(1e21, "--x", "a zettabyte")


def test_grid_cap_is_the_documented_one(capsys):
    from replica.workflow.cli import parse_number_grid

    assert parse_number_grid(f"1:2:{LIMITS['grid_points']}", "--alpha").size == LIMITS["grid_points"]
    with pytest.raises(UsageError, match="at most"):
        parse_number_grid(f"1:2:{LIMITS['grid_points'] + 1}", "--alpha")


# ----------------------------------------------------------------------------- configuration files
def test_binary_config_file_is_one_line(tmp_path, capsys):
    binary = tmp_path / "relu.h5"
    binary.write_bytes(b"\x89HDF\r\n\x1a\n\x00\x00\xff\xfe" * 10)
    assert sweep_main(["--config", str(binary)]) == 2
    assert "--config" in one_line(capsys.readouterr().err)


@pytest.mark.parametrize("run, table", [(_spectrum, "[spectrum]"), (_sgd, "[sgd]")])
def test_shared_config_list_names_the_key_in_the_file(tmp_path, capsys, run, table):
    cfg = tmp_path / "run.toml"
    cfg.write_text("layers = 2\ngamma = [1.0, 1.0]\n")
    assert run(["--config", str(cfg), "-o", str(tmp_path / "x.h5")]) == 2
    line = one_line(capsys.readouterr().err)
    assert "key 'gamma' in" in line and "run.toml" in line and table in line, line


def test_per_command_table_serves_both(tmp_path, capsys):
    """The README's remedy works: the list under [sweep], one value under [spectrum]."""
    from replica.workflow.spectrum import build_parser
    from replica.workflow.config import parse_with_config

    cfg = tmp_path / "run.toml"
    cfg.write_text("[sweep]\ngamma = [1.0, 1.0]\n[spectrum]\ngamma = 1.0\n")
    args = parse_with_config(build_parser(), ["--config", str(cfg)])
    assert args.gamma == 1.0


def test_missing_optional_dependency_is_one_line_and_exit_2(tmp_path, capsys, monkeypatch):
    # replica-experiment runs through the shared command runner; without JAX it names the extra
    monkeypatch.setitem(sys.modules, "jax", None)
    out = tmp_path / "x.h5"
    rc = _experiment(["--dim", "12", "--alpha", "1", "--steps", "10", "-o", str(out)])
    err = capsys.readouterr().err
    assert rc == 2 and "jax is missing" in one_line(err) and "[experiments]" in err
    assert not out.exists()


@pytest.mark.parametrize("command", ["sgd", "spectrum"])
@pytest.mark.parametrize("existing", [False, True])
def test_interrupt_keeps_the_old_file_and_says_so(tmp_path, capsys, monkeypatch, existing, command):
    # Ctrl-C during the run of a command without checkpoints: exit 130, one line, the previous
    # file byte-identical
    import replica.workflow.spectrum as spectrum
    import replica.simulations.sgd as sgd

    out = tmp_path / "s.h5"
    if existing:
        out.write_bytes(b"old result")

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    if command == "sgd":
        monkeypatch.setattr(sgd, "run_sgd", interrupted)
        rc = _sgd(["--dim", "12", "--time", "1", "--quiet", "--overwrite", "-o", str(out)])
    else:
        monkeypatch.setattr(spectrum, "spectrum", interrupted)
        rc = _spectrum(["--gamma", "0.5", "--lambda", "1:2:3", "--quiet", "--overwrite", "-o", str(out)])
    line = one_line(capsys.readouterr().err)
    assert rc == 130
    state = "unchanged" if existing else "not written"
    assert line == f"replica-{command}: interrupted; nothing saved; {out} {state}"
    assert (out.read_bytes() == b"old result") if existing else not out.exists()
