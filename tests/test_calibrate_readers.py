"""The log readers of ``twin calibrate`` (issue 44): Slurm ``sacct --parsable2``, NVIDIA XID kernel-log
lines and repair tickets, on text written in each format, including the formats' documented samples;
malformed lines stop the command with exit 2 naming the file, the line and the field."""

from __future__ import annotations

import copy
import math
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
import yaml

from twin import cli
from twin.calibrate.common import sniff, zone
from twin.calibrate.sacct import gpus_of, node_days, read_sacct, state_of
from twin.calibrate.tickets import parse_columns, read_tickets
from twin.calibrate.xid import XID_TABLE, load_table, read_xids, xid_line
from twin.errors import InputError

UTC = timezone.utc
SAMPLES = Path(__file__).resolve().parents[1] / "scenarios" / "examples" / "calibrate" / "samples"
"""The documentation samples bundled with the example logs (docs/guide/calibrate.md)."""


def ts(text: str, tz: Any = UTC) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=tz).timestamp()


def write(tmp: Path, name: str, text: str) -> Path:
    p = tmp / name
    p.write_text(text, encoding="utf-8")
    return p


# ------------------------------------------------------------------ sacct

# samples/sacct-man-page.txt: the sacct(1) man page's example jobs (2 FAILED, 3 COMPLETED, 4 with its
# step 4.0), as
# `sacct --parsable2 --format=JobID,JobName,Partition,Account,AllocCPUS,State,ExitCode,Start,End,NNodes,NodeList`
# would print them (times and nodes added: the man page's example shows neither).
MAN_PAGE = (SAMPLES / "sacct-man-page.txt").read_text(encoding="utf-8")

GPU_JOBS = (SAMPLES / "sacct-gpu-jobs.txt").read_text(encoding="utf-8")


def test_sacct_man_page_sample(tmp_path: Path) -> None:
    log = read_sacct(write(tmp_path, "s.txt", MAN_PAGE), UTC)
    a = log.attempts
    assert list(a["job"]) == ["2", "3", "4"]
    assert list(a["state"].astype(str)) == ["FAILED", "COMPLETED", "COMPLETED"]
    assert log.steps == 1 and log.pending == 0
    assert a["start_s"].iloc[1] == ts("2024-01-15T09:01:00") and a["end_s"].iloc[1] == ts("2024-01-15T09:05:00")
    assert sniff(tmp_path / "s.txt") == "sacct"


def test_sacct_steps_arrays_het_requeues_running(tmp_path: Path) -> None:
    log = read_sacct(write(tmp_path, "s.txt", GPU_JOBS), UTC)
    a = log.attempts.set_index(["job", "start_s"])
    assert log.steps == 4  # 1234.batch, .extern, .0 and 1236+0.0: never jobs of their own
    assert log.pending == 1  # the pending array range
    first = a.loc[("1234", ts("2024-01-15T09:00:05"))]
    again = a.loc[("1234", ts("2024-01-15T11:20:00"))]  # requeued: a second attempt of the same job
    assert first["state"] == "NODE_FAIL" and first["nodes"] == 4 and first["gpus"] == 32
    assert first["nodelist"] == "gpu[001-004]" and again["state"] == "COMPLETED"
    run = a.loc[("1235_7", ts("2024-01-15T10:00:00"))]
    assert run["state"] == "RUNNING" and math.isnan(run["end_s"]) and run["gpus"] == 8  # typed gres counted
    het = a.loc[("1236", ts("2024-01-15T10:00:00"))]
    assert het["nodes"] == 3 and het["gpus"] == 16 and het["nodelist"] == "cpu001,gpu[012-013]"
    assert log.states["CANCELLED"] == 1 and log.states["TIMEOUT"] == 1 and log.states["PREEMPTED"] == 1
    assert log.states["NODE_FAIL"] == 1
    # the running job is censored at the end of the observation
    end = ts("2024-01-15T12:00:00")
    one = log.attempts[log.attempts["job"] == "1235_7"]
    assert node_days(one, end) == pytest.approx(2.0 / 24.0)


def test_sacct_time_zone(tmp_path: Path) -> None:
    p = write(tmp_path, "s.txt", MAN_PAGE)
    utc = read_sacct(p, zone("UTC")).attempts["start_s"].iloc[0]
    berlin = read_sacct(p, zone("Europe/Berlin")).attempts["start_s"].iloc[0]
    chicago = read_sacct(p, zone("America/Chicago")).attempts["start_s"].iloc[0]
    assert utc - berlin == 3600.0 and chicago - utc == 6 * 3600.0  # January: CET = UTC+1, CST = UTC-6
    with pytest.raises(InputError, match="time zone"):
        zone("Mars/Olympus")


def test_sacct_fields() -> None:
    assert state_of("CANCELLED by 1000") == "CANCELLED" and state_of("BOGUS") is None
    assert gpus_of("billing=64,cpu=64,gres/gpu=8,mem=1000G,node=1") == 8
    assert gpus_of("cpu=4,gres/gpu:a100=2,gres/gpu:h100=4") == 6
    assert gpus_of("cpu=4,gres/gpu=4,gres/gpu:h100=4") == 4
    assert gpus_of("cpu=4,mem=1G") == 0


@pytest.mark.parametrize("line,field", [
    ("77|x|2024-01-15T09:00:00|2024-01-15T10:00:00|2024-01-15T11:00:00|COMPLETED|2|gpu[001-003]|gres/gpu=8|0:0",
     "NodeList"),  # 3 names, NNodes 2
    ("77|x|2024-01-15T09:00:00|2024-01-15T10:00:00|2024-01-15T11:00:00|COMPLETED|2|gpu[001-|gres/gpu=8|0:0",
     "NodeList"),
    ("77|x|2024-01-15T09:00:00|yesterday|2024-01-15T11:00:00|COMPLETED|1|gpu001|gres/gpu=8|0:0", "Start"),
    ("77|x|2024-01-15T09:00:00|2024-01-15T10:00:00|2024-01-15T11:00:00|EXPLODED|1|gpu001|gres/gpu=8|0:0", "State"),
    ("7x7|x|2024-01-15T09:00:00|2024-01-15T10:00:00|2024-01-15T11:00:00|COMPLETED|1|gpu001|gres/gpu=8|0:0", "JobID"),
    ("77|x|2024-01-15T09:00:00|2024-01-15T10:00:00|2024-01-15T09:00:00|COMPLETED|1|gpu001|gres/gpu=8|0:0", "End"),
    ("77|x|2024-01-15T09:00:00|2024-01-15T10:00:00|2024-01-15T11:00:00|COMPLETED|one|gpu001|gres/gpu=8|0:0",
     "NNodes"),
])
def test_sacct_malformed_line_names_file_line_and_field(tmp_path: Path, line: str, field: str) -> None:
    p = write(tmp_path, "bad.txt", GPU_JOBS + line + "\n")
    with pytest.raises(InputError) as exc:
        read_sacct(p, UTC)
    assert exc.value.field == f"line 15, field {field}" and exc.value.source == str(p)


def test_sacct_short_line_and_missing_header_fields(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="fields but the header has"):
        read_sacct(write(tmp_path, "a.txt", GPU_JOBS + "77|x|y\n"), UTC)
    with pytest.raises(InputError, match="missing NodeList"):
        read_sacct(write(tmp_path, "b.txt", "JobID|Start|End|State|NNodes\n"), UTC)
    # sacct --parsable: a trailing | on every line
    log = read_sacct(write(tmp_path, "c.txt", "".join(x + "|\n" for x in MAN_PAGE.splitlines())), UTC)
    assert len(log.attempts) == 3


# ------------------------------------------------------------------ kernel logs

# samples/xid-syslog.txt. NVIDIA's XID catalogue prints its examples as "NVRM: Xid (PCI:0000:03:00):
# 79, ..." lines; older drivers print no pid (as in NVIDIA/NVSentinel issue 155: "NVRM: Xid
# (PCI:0000:44:00): 79, GPU has fallen off the bus").
SYSLOG = (SAMPLES / "xid-syslog.txt").read_text(encoding="utf-8")


def test_syslog_sample_storms_year_rollover_unknown(tmp_path: Path) -> None:
    p = write(tmp_path, "messages", SYSLOG)
    log = read_xids([p], UTC, year=2023)
    ev = log.events
    assert list(ev["xid"]) == [79, 79, 48, 13, 63]
    assert log.storm_lines == 2  # the two repeats of the first 79 within 300 s of the line before
    first = ev.iloc[0]
    assert first["host"] == "gpu001" and first["pci"] == "0000:3b:00" and first["time_s"] == ts("2023-12-31T23:59:59")
    assert ev.iloc[1]["time_s"] == ts("2024-01-01T03:00:00")  # Dec -> Jan: the next year
    assert first["part"] == "gpu" and first["category"] == "failure"
    assert ev.iloc[2]["part"] == "hbm" and ev.iloc[3]["category"] == "application"
    assert ev.iloc[4]["category"] == "remediation"
    assert dict(log.unknown) == {154: 1}  # counted, not dropped silently
    assert log.lines_by_xid[79] == 4
    assert log.first_s == ts("2023-12-31T23:58:01") and log.last_s == ts("2024-01-01T07:00:00")
    # a shorter storm window keeps the 5-s repeats as events of their own
    assert (read_xids([p], UTC, year=2023, storm_window_s=1.0).events["xid"] == 79).sum() == 4


def test_syslog_needs_a_year(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="--year"):
        read_xids([write(tmp_path, "messages", SYSLOG)], UTC)


def test_iso_journald_and_dmesg_lines(tmp_path: Path) -> None:
    iso = write(tmp_path, "kern.log", (
        "2024-03-02T04:11:00.123456+01:00 gpu007 kernel: NVRM: Xid (PCI:0000:ba:00): 95, pid=9, name=python, "
        "Uncontained: FBHUB. RST: Yes, D-RST: No\n"
        "2024-03-02T05:00:00 gpu007 kernel: NVRM: Xid (PCI:0000:ba:00): 119, pid=9, name=python, Timeout waiting "
        "for RPC from GSP!\n"))
    log = read_xids([iso], zone("Europe/Berlin"))
    assert list(log.events["time_s"]) == [ts("2024-03-02T03:11:00.123456"), ts("2024-03-02T04:00:00")]
    assert list(log.events["category"]) == ["failure", "reset"]
    # journalctl -o short-iso (+0000 offsets) and RFC 5424 lines from a network syslog (priority, version)
    net = write(tmp_path, "net.log", "2024-03-02T04:11:00+0000 gpu010 kernel: NVRM: Xid (PCI:0000:18:00): 79, "
                "pid=1, name=python, GPU has fallen off the bus.\n<4>1 2024-03-02T05:11:00Z gpu011 kernel: NVRM: "
                "Xid (PCI:0000:18:00): 79, GPU has fallen off the bus.\n")
    ev = read_xids([net], UTC).events
    assert list(ev["host"]) == ["gpu010", "gpu011"]
    assert list(ev["time_s"]) == [ts("2024-03-02T04:11:00"), ts("2024-03-02T05:11:00")]
    # journalctl -k -o short-precise: fractional seconds after the syslog stamp
    jp = write(tmp_path, "journal.txt", "Mar 02 04:11:00.654321 gpu008 kernel: NVRM: Xid (PCI:0000:18:00): 74, "
               "pid=1, name=python, NVLink: fatal error detected on link 3(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)\n")
    ev = read_xids([jp], UTC, year=2024).events
    assert ev.iloc[0]["host"] == "gpu008" and ev.iloc[0]["part"] == "nvlink"
    assert ev.iloc[0]["time_s"] == pytest.approx(ts("2024-03-02T04:11:00.654321"))
    # dmesg -T: no host in the line, taken from the file name
    dm = SAMPLES / "gpu009.dmesg.txt"
    ev = read_xids([dm], UTC).events
    assert ev.iloc[0]["host"] == "gpu009" and ev.iloc[0]["time_s"] == ts("2024-03-02T04:11:00")
    assert sniff(dm) == "kernel"


def test_writer_lines_read_back(tmp_path: Path) -> None:
    t = ts("2026-02-03T04:05:06")
    text = "".join(xid_line(t + k, "node001", "0000:18:00", 79, "GPU has fallen off the bus.", style) + "\n"
                   for k, style in enumerate(("syslog", "iso", "dmesg")))
    p = write(tmp_path, "node001.log", text)
    ev = read_xids([p], UTC, year=2026, storm_window_s=0.5).events
    assert list(ev["time_s"]) == [t, t + 1, t + 2] and set(ev["host"]) == {"node001"}
    assert len(read_xids([p], UTC, year=2026, storm_window_s=5.0).events) == 1  # one storm


def test_malformed_kernel_lines(tmp_path: Path) -> None:
    with pytest.raises(InputError) as exc:
        read_xids([write(tmp_path, "a.log", "[ 1843.308145] NVRM: Xid (PCI:0000:b3:00): 79, GPU has fallen\n")], UTC)
    assert exc.value.field == "line 1, field time" and "dmesg -T" in exc.value.message
    with pytest.raises(InputError) as exc:
        read_xids([write(tmp_path, "b.log", SYSLOG + "Jan  1 08:00:00 gpu003 kernel: NVRM: Xid (PCI:zz): 79\n")],
                  UTC, year=2024)
    assert exc.value.field == "line 12, field Xid"
    with pytest.raises(InputError) as exc:
        read_xids([write(tmp_path, "c.log", "yesterday gpu003 kernel: NVRM: Xid (PCI:0000:18:00): 79, x\n")], UTC)
    assert exc.value.field == "line 1, field prefix"


def test_xid_table_covers_the_issue_and_overrides(tmp_path: Path) -> None:
    expect = {79: ("gpu", "failure"), 48: ("hbm", "failure"), 64: ("hbm", "failure"), 95: ("hbm", "failure"),
              94: (None, "contained"), 63: ("hbm", "remediation"), 92: ("hbm", "warning"),
              74: ("nvlink", "failure"), 119: ("gpu", "reset"), 120: ("gpu", "reset"),
              13: (None, "application"), 31: (None, "application"), 43: (None, "application")}
    for xid, (part, cat) in expect.items():
        assert XID_TABLE[xid][:2] == (part, cat), xid
    y = write(tmp_path, "xids.yaml", yaml.safe_dump({154: {"part": "gpu", "category": "reset"},
                                                     79: {"part": "gpu", "category": "remediation"}}))
    table = load_table(y)
    assert table.entries[154][:2] == ("gpu", "reset") and table.entries[79][1] == "remediation"
    ev = read_xids([write(tmp_path, "messages", SYSLOG)], UTC, year=2023, table=table)
    assert not ev.unknown and (ev.events["xid"] == 154).sum() == 1
    for bad, where in (({79: {"category": "broken"}}, "79.category"), ({79: {"category": "failure"}}, "79.part"),
                       ({"x": {"category": "warning"}}, "x"), ({79: {"category": "warning", "colour": 1}},
                                                               "79.colour")):
        with pytest.raises(InputError) as exc:
            load_table(write(tmp_path, "bad.yaml", yaml.safe_dump(bad)))
        assert exc.value.field == where


# ------------------------------------------------------------------ tickets

TICKETS = (SAMPLES / "tickets-named-columns.csv").read_text(encoding="utf-8")


def test_tickets_with_named_columns(tmp_path: Path) -> None:
    p = write(tmp_path, "t.csv", TICKETS)
    cols = parse_columns(["node=host", "start=opened", "end=closed", "cause=category", "part=component",
                          "work_start=hands_on"])
    log = read_tickets(p, zone("UTC"), cols)
    t = log.tickets
    assert list(t["node"]) == ["gpu017", "gpu033", "gpu034"] and list(t["line"]) == [3, 4, 5]
    assert t["end_s"].iloc[0] - t["work_start_s"].iloc[0] == pytest.approx((3 * 60 + 35) * 60)
    assert math.isnan(t["end_s"].iloc[1])  # still open: censored
    assert list(t["part"]) == ["gpu", "host", ""] and log.causes["maintenance"] == 1
    assert sniff(p) == "tickets"
    with pytest.raises(InputError, match="missing node"):
        read_tickets(p, zone("UTC"))  # the default names are not this file's
    with pytest.raises(InputError, match="unknown key"):
        parse_columns(["host=node"])


@pytest.mark.parametrize("row,field", [
    ("gpu1,2024-03-02,2024-03-01T00:00:00,hardware,gpu,", "closed"),
    ("gpu1,soon,,hardware,gpu,", "opened"),
    (",2024-03-02T00:00:00,,hardware,gpu,", "host"),
    ("gpu1,2024-03-02T00:00:00,2024-03-02T05:00:00,hardware,gpu,2024-03-02T06:00:00", "hands_on"),
])
def test_tickets_malformed(tmp_path: Path, row: str, field: str) -> None:
    cols = parse_columns(["node=host", "start=opened", "end=closed", "cause=category", "part=component",
                          "work_start=hands_on"])
    with pytest.raises(InputError) as exc:
        read_tickets(write(tmp_path, "t.csv", TICKETS + row + "\n"), UTC, cols)
    assert exc.value.field == f"line 6, field {field}"


# ------------------------------------------------------------------ the command on bad input

BASE: dict[str, Any] = {
    "name": "tiny", "seed": 3, "horizon_days": 2,
    "cluster": {"racks": 1, "nodes_per_rack": 2, "node": {"gpus": 8, "parts": {
        "gpu": {"count": 8, "failure": {"mtbf_h": 5000}, "repair": {"time": {"dist": "fixed", "value_h": 2}}}}}},
    "maintenance": {"crews": {"technicians": {"count": 1}}},
}


@pytest.mark.parametrize("name,text,where", [
    ("sacct.txt", GPU_JOBS + "77|x|2024-01-15T09:00:00|2024-01-15T10:00:00|Unknown|RUNNING|2|gpu[1-3]||0:0\n",
     "line 15, field NodeList"),
    ("kern.log", SYSLOG.replace("(PCI:0000:44:00): 79", "(PCI:0000:44:00): seventy-nine"), "line 6, field Xid"),
])
def test_command_exits_2_naming_the_line_and_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                            name: str, text: str, where: str) -> None:
    base = write(tmp_path, "base.yaml", yaml.safe_dump(BASE))
    log = write(tmp_path, name, text)
    out = tmp_path / "out"
    code = cli.main(["calibrate", str(log), "--base", str(base), "--out", str(out), "--year", "2024", "--reps", "0"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.strip() == err.strip().splitlines()[0] and f"{log}: {where}:" in err
    assert not out.exists() and [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_tickets_work_end_and_the_synthetic_writers_columns(tmp_path: Path) -> None:
    p = write(tmp_path, "t.csv", "node,start,end,cause,part,work_start,work_end\n"
              "node001,2026-01-06T18:30:33,2026-01-06T22:43:25,hardware,gpu,2026-01-06T18:45:33,2026-01-06T20:43:25\n"
              "node002,2026-01-07T00:00:00,2026-01-07T00:15:00,hardware,gpu,,\n")
    t = read_tickets(p, UTC).tickets
    assert t["work_end_s"].iloc[0] - t["work_start_s"].iloc[0] == pytest.approx(7072.0)
    assert math.isnan(t["work_start_s"].iloc[1]) and math.isnan(t["work_end_s"].iloc[1])
    bad = write(tmp_path, "b.csv", "node,start,end,work_start,work_end\n"
                "n1,2026-01-06T18:00:00,2026-01-06T22:00:00,2026-01-06T20:00:00,2026-01-06T19:00:00\n")
    with pytest.raises(InputError) as exc:
        read_tickets(bad, UTC)
    assert exc.value.field == "line 2, field work_end"


def test_sacct_in_chunks_reads_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import twin.calibrate.sacct as sacct

    p = write(tmp_path, "s.txt", GPU_JOBS)
    whole = read_sacct(p, UTC).attempts
    monkeypatch.setattr(sacct, "CHUNK_ROWS", 2)
    chunked = read_sacct(p, UTC).attempts
    assert list(chunked.columns) == list(whole.columns)
    for c in whole.columns:
        assert [str(x) for x in chunked[c]] == [str(x) for x in whole[c]], c
    assert chunked["nodelist"].dtype == "category"


def test_job_trace_from_accounting(tmp_path: Path) -> None:
    from twin.calibrate.sacct import job_trace

    a = read_sacct(write(tmp_path, "s.txt", GPU_JOBS), UTC).attempts
    t0, t1 = ts("2024-01-15T09:00:00"), ts("2024-01-15T13:00:00")
    tr = job_trace(a, t0, t1, gpus_per_node=8).set_index("name")
    # 1234: two attempts (2 h 13 min 15 s, then 3 h 40 min, to the window's end at 13:00: 1 h 40 min)
    assert tr.loc["job1234", "duration_h"] == pytest.approx((2 * 3600 + 13 * 60 + 15 + 100 * 60) / 3600, abs=1e-5)
    assert tr.loc["job1234", "gpus"] == 32 and tr.loc["job1234", "submit_h"] == 0.0
    assert tr.loc["job1235_7", "duration_h"] == pytest.approx(3.0)  # running: censored at the window's end
    assert tr.loc["job1239", "gpus"] == 8 and "job1235_[8-20]" not in tr.index


def test_command_on_accounting_alone_with_an_explicit_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                                              ) -> None:
    base = write(tmp_path, "base.yaml", yaml.safe_dump(BASE))
    log = write(tmp_path, "jobs.export", GPU_JOBS)
    out = tmp_path / "out"
    code = cli.main(["calibrate", f"sacct:{log}", "--base", str(base), "--out", str(out), "--reps", "0",
                     "--tz", "Europe/Berlin"])
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "job interruptions: " in printed and "(1 NODE_FAIL)" in printed
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "By cause: unattributed 1" in report and "PREEMPTED 1" in report and "TIMEOUT 1" in report
    assert "the base scenario 2" in report  # the inventory differs from the base: said, not refused
    assert (out / "trace.csv").read_text(encoding="utf-8").startswith("name,submit_h,gpus,duration_h\n")
    assert cli.main(["calibrate", f"sacct:{log}", "--base", str(base), "--out", str(out), "--reps", "0"]) == 2
    assert "exists" in capsys.readouterr().err


def test_a_base_with_node_pools_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The logs do not say which host is of which node type: fitting every host into cluster.node would give the
    pool's nodes the base type's fitted laws silently. Refused, one line, exit 2, naming the file and field."""
    pooled = copy.deepcopy(BASE)
    pooled["cluster"]["racks"] = 2
    pooled["cluster"]["node"]["type"] = "h100"
    pooled["cluster"]["pools"] = [{"name": "b200", "racks": 1, "node": {"type": "b200"}}]
    base = write(tmp_path, "pooled.yaml", yaml.safe_dump(pooled))
    log = write(tmp_path, "jobs.export", GPU_JOBS)
    code = cli.main(["calibrate", f"sacct:{log}", "--base", str(base), "--out", str(tmp_path / "out"), "--reps", "0"])
    err = capsys.readouterr().err
    assert code == 2
    assert f"{base}: cluster.pools: node pools (b200) are not calibrated" in err and "Traceback" not in err
    assert len([ln for ln in err.splitlines() if ln.startswith("error")]) == 1
    assert not (tmp_path / "out").exists()
