"""fio.parse against fio 3.33 JSON output.

captured-guest-*: fio in the guest (the lead's boot).
icount-guest-filecreate-{tmpfs,ext4}.json: workloads/fio-filecreate.wl (1 job,
group_reporting) in a 1-vCPU -icount boot of mainline perf, 2026-12-06.
host-file{create,stat,delete}-rw-{read,write}.json: fio 3.33 on the build host,
in a scratch directory on the host's disk, run one after the other:

  fio --name=NAME --ioengine=ENGINE [--rw=write] --directory=DIR --numjobs=2
      --nrfiles=200 --filesize=4k --bs=4k --openfiles=1 --fallocate=none
      --filename_format='f.$jobnum.$filenum' --output-format=json
"""

import json
from pathlib import Path

import pytest

from harness.parsers import fio

DATA = Path(__file__).resolve().parent.parent / "test_data" / "fio"


def read(name: str) -> str:
    return (DATA / name).read_text()


@pytest.mark.parametrize("name, direction", [
    ("host-filecreate-rw-read.json", "read"),
    ("host-filestat-rw-read.json", "read"),
    ("host-filedelete-rw-read.json", "read"),
    ("host-filecreate-rw-write.json", "write"),
    ("host-filestat-rw-write.json", "write"),
    ("host-filedelete-rw-write.json", "write"),
])
def test_host_captures_account_to_the_rw_direction(name, direction):
    run = fio.parse(read(name))
    raw = json.loads(read(name))["jobs"]
    assert len(run.jobs) == 2
    for job, raw_job in zip(run.jobs, raw):
        assert job.direction == direction
        assert job.ops == 200  # nrfiles per job
        assert job.error == 0
        stats = raw_job[direction]
        assert job.runtime_ms == stats["runtime"]
        assert job.ops_per_s == pytest.approx(stats["iops"])  # one io_u per file here
        assert job.clat_ns_mean == stats["clat_ns"]["mean"]
        assert raw_job[direction]["lat_ns"]["N"] == 0  # the engines only fill clat
        other = "write" if direction == "read" else "read"
        assert raw_job[other]["total_ios"] == 0
    assert run.total_ops == 400


def test_filecreate_values():
    first, second = fio.parse(read("host-filecreate-rw-read.json")).jobs
    assert (first.name, first.runtime_ms, first.ops) == ("create", 23, 200)
    assert first.ops_per_s == pytest.approx(8695.652174, rel=1e-9)
    assert first.clat_ns_mean == 60574.97
    assert len(first.clat_ns_percentiles) == 17
    assert first.clat_ns_percentiles["1.000000"] == 34048
    assert first.clat_ns_percentiles["50.000000"] == 37120
    assert second.runtime_ms == 18


def test_filedelete_values():
    first, _ = fio.parse(read("host-filedelete-rw-read.json")).jobs
    assert (first.name, first.runtime_ms) == ("delete", 491)
    assert first.clat_ns_mean == 2403347.67
    assert first.clat_ns_percentiles["50.000000"] == 2637824


def test_guest_capture():
    run = fio.parse(read("captured-guest-filecreate.json"))
    assert [(j.name, j.direction, j.ops, j.runtime_ms) for j in run.jobs] == [
        ("x", "read", 200, 271), ("x", "read", 200, 264)]
    assert run.jobs[0].ops_per_s == pytest.approx(738.00738, rel=1e-6)
    assert run.jobs[1].clat_ns_percentiles["99.000000"] == 8716288


def test_warnings_before_the_json_are_skipped():
    text = ("fio: this platform does not support process shared mutexes, forcing use of threads.\n"
            "note: both iodepth >= 1 and synchronous I/O engine are selected\n"
            + read("host-filestat-rw-read.json") + "trailing noise\n")
    assert fio.parse(text) == fio.parse(read("host-filestat-rw-read.json"))


@pytest.mark.parametrize("text", [
    "fio: engine filecreate not loadable\n",
    '{\n  "fio version" : "fio-3.33",\n  "jobs" : [\n',  # cut off mid-run
    '{\n  "jobs" : [ {"jobname": "x", "read": {"runtime": "n/a"}} ]\n}\n',
])
def test_unparsable_output_is_a_fio_error(text):
    with pytest.raises(fio.FioError):
        fio.parse(text)


def test_as_json():
    data = fio.parse(read("host-filestat-rw-write.json")).as_json()
    assert json.loads(json.dumps(data)) == data
    first = data["jobs"][0]
    assert list(first) == ["name", "error", "direction", "ops", "runtime_ms", "ops_per_s",
                           "clat_ns_mean", "clat_ns_percentiles", "jobs", "clat_ns_max"]
    assert (first["name"], first["direction"], first["ops"]) == ("statw", "write", 200)


def test_a_job_that_did_nothing_keeps_the_rw_direction():
    data = json.loads(read("host-filecreate-rw-write.json"))
    job = data["jobs"][0]
    job["error"] = 2
    job["write"]["total_ios"] = 0
    job["write"]["runtime"] = 0
    job["write"]["clat_ns"] = {"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0}
    parsed = fio.parse(json.dumps(data)).jobs[0]
    assert (parsed.direction, parsed.ops, parsed.error) == ("write", 0, 2)
    assert (parsed.ops_per_s, parsed.clat_ns_percentiles) == (0.0, {})


def test_the_time_inside_the_operations_is_timed_in_nanoseconds_not_fios_milliseconds():
    """Under -icount fio's runtime is whole milliseconds and mostly fio's own work:
    every kernel read the same 1028.8/s on tmpfs and 786.16/s on ext4."""
    [tmpfs] = fio.parse(read("icount-guest-filecreate-tmpfs.json")).jobs
    assert (tmpfs.ops, tmpfs.runtime_ms, tmpfs.jobs) == (1000, 972, 1)
    assert tmpfs.ops_per_s == pytest.approx(1028.806584)
    assert tmpfs.busy_s == pytest.approx(1000 * 63399.264e-9)  # 63 ms of the 972
    assert tmpfs.clat_ns_max == 162660
    [ext4] = fio.parse(read("icount-guest-filecreate-ext4.json")).jobs
    assert ext4.runtime_ms == 1272 and ext4.busy_s == pytest.approx(1000 * 363243.072e-9)


def test_a_group_reporting_entry_shares_its_operations_among_its_jobs():
    text = read("icount-guest-filecreate-tmpfs.json").replace(
        '"numjobs" : "1"', '"numjobs" : "2"')
    [job] = fio.parse(text).jobs
    assert job.jobs == 2 and job.busy_s == pytest.approx(1000 * 63399.264e-9 / 2)
    # without group_reporting an entry is one job
    assert {j.jobs for j in fio.parse(read("captured-guest-filecreate.json")).jobs} == {1}
