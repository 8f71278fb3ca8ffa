"""Weather files as formats of cooling.ambient.csv (issue 42 item 4): the NSRDB TMY3 reader on the real
Golden, CO file, the EPW reader on a file written as the EnergyPlus data dictionary specifies, malformed
lines (one-line error naming the file and line, exit 2), and the bundled synthetic hot, humid year."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from tests import weather_files as wf
from twin.cli import main
from twin.errors import InputError
from twin.physics import psychro
from twin.scenario.weather import detect_format, read_epw, read_tmy3, read_weather


def test_tmy3_reader_on_the_real_golden_file() -> None:
    w = read_tmy3(wf.TMY3)
    rows = list(csv.reader(wf.TMY3.open(encoding="utf-8")))
    head = rows[1]
    data = rows[2:]
    assert len(w.dry_c) == len(data) == 8760
    assert w.elevation_m == 1829.0 and "GOLDEN" in w.site
    k_dry, k_dew, k_p = (head.index(c) for c in ("Dry-bulb (C)", "Dew-point (C)", "Pressure (mbar)"))
    for i in (0, 4000, 8759):  # rows read by column name, pressure mbar -> Pa
        assert w.dry_c[i] == float(data[i][k_dry])
        assert w.dew_c[i] == min(float(data[i][k_dew]), float(data[i][k_dry]))
        assert w.pressure_pa[i] == 100.0 * float(data[i][k_p])
    # 1,829 m: the station pressure sits near the standard atmosphere there (81.2 kPa), far below sea level
    assert abs(w.pressure_pa.mean() - float(psychro.site_pressure_pa(1829.0))) < 1500.0
    # wet-bulb derived at the station pressure, between dew point and dry-bulb
    assert np.all(w.wet_c <= w.dry_c + 1e-9) and np.all(w.wet_c >= w.dew_c - 1e-6)
    i = 4000
    assert w.wet_c[i] == pytest.approx(float(psychro.wet_bulb_c(w.dry_c[i], w.dew_c[i], w.pressure_pa[i])))
    assert detect_format(wf.TMY3) == "tmy3"


def test_epw_reader_on_a_file_written_per_the_spec() -> None:
    assert wf.EPW_48H.read_text(encoding="utf-8") == wf.golden_48h_epw()  # the committed file is the writer's
    w = read_epw(wf.EPW_48H)
    t = read_tmy3(wf.TMY3)
    assert len(w.dry_c) == 48 and w.elevation_m == 1829.0
    np.testing.assert_array_equal(w.dry_c, t.dry_c[:48])
    np.testing.assert_array_equal(w.dew_c, t.dew_c[:48])
    np.testing.assert_array_equal(w.pressure_pa, t.pressure_pa[:48])
    np.testing.assert_allclose(w.wet_c, t.wet_c[:48])
    assert detect_format(wf.EPW_48H) == "epw"
    assert read_weather(wf.EPW_48H, "auto") is not None


def test_bundled_hot_humid_year_is_the_labelled_synthetic_one() -> None:
    text = wf.HOT_HUMID.read_text(encoding="utf-8")
    assert text == wf.hot_humid_epw()
    assert "SYNTHETIC" in text.splitlines()[0] and "NOT a real site" in text.splitlines()[5]
    w = read_epw(wf.HOT_HUMID)
    assert len(w.dry_c) == 8760
    assert w.dry_c.mean() == pytest.approx(27.0, abs=0.3)
    assert (w.dry_c - w.wet_c).mean() == pytest.approx(4.0, abs=0.5)


def _bad(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


@pytest.mark.parametrize("line, edit, fragment", [
    (9 + 5, lambda f: f[:6] + ["x"] + f[7:], "dry-bulb (field 7) is not a number"),
    (9 + 7, lambda f: f[:7] + ["99.9"] + f[8:], "dew point (field 8) is missing"),
    (9 + 0, lambda f: f[:9] + ["500"] + f[10:], "station pressure must be in"),
    (9 + 3, lambda f: f[:8], "an EPW data row has 35 fields"),
    (8, lambda f: f[:2] + ["4"] + f[3:], "only hourly EPW files are read (1 record per hour), got 4"),
])
def test_malformed_epw_line_names_file_and_line(tmp_path: Path, line: int, edit, fragment: str) -> None:
    lines = wf.golden_48h_epw().splitlines()
    lines[line - 1] = ",".join(edit(lines[line - 1].split(",")))
    p = _bad(tmp_path, "bad.epw", "\n".join(lines) + "\n")
    with pytest.raises(InputError) as ei:
        read_epw(p)
    msg = ei.value.one_line()
    assert msg.startswith(f"{p}: line {line}: ") and fragment in msg and "\n" not in msg


def test_malformed_tmy3_line_names_file_and_line(tmp_path: Path) -> None:
    lines = wf.TMY3.read_text(encoding="utf-8").splitlines()[:30]
    f = lines[20].split(",")
    f[31] = "-9900"  # Dry-bulb (C) missing
    lines[20] = ",".join(f)
    p = _bad(tmp_path, "bad-tmy3.csv", "\n".join(lines) + "\n")
    with pytest.raises(InputError, match=r"line 21: Dry-bulb \(C\) is missing"):
        read_tmy3(p)
    p2 = _bad(tmp_path, "nohead.csv", lines[0] + "\nDate (MM/DD/YYYY),Time (HH:MM),Dew-point (C)\n")
    with pytest.raises(InputError, match=r"line 2: a TMY3 header has the column 'Dry-bulb \(C\)'"):
        read_tmy3(p2)


def test_malformed_weather_file_exits_2_with_the_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = wf.golden_48h_epw().splitlines()
    f = lines[20].split(",")
    f[6] = "hot"
    lines[20] = ",".join(f)
    _bad(tmp_path, "site.epw", "\n".join(lines) + "\n")
    sc = _bad(tmp_path, "sc.yaml", f"extends: {wf.ROOT / 'scenarios' / 'air.yaml'}\nhorizon_days: 1\ncooling:\n"
              "  ambient:\n    csv: {file: site.epw}\n")
    assert main(["run", str(sc), "--results", str(tmp_path / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "site.epw: line 21: dry-bulb (field 7) is not a number: 'hot'" in err[0]


def test_explicit_format_is_checked_and_the_project_csv_still_reads(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"line 1: an EPW file starts with LOCATION"):
        read_weather(wf.TMY3, "epw")
    own = _bad(tmp_path, "amb.csv", "temp_c,wet_bulb_c\n20,15\n25,18\n")
    assert detect_format(own) == "twin" and read_weather(own, "auto") is None
