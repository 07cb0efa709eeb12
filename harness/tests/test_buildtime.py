"""The time a run's image builds will take, said before the first one starts."""

import json

from harness.kernels import buildtime
from harness.kernels.kbuild import KernelImage


def _image(layout, kernel, flavour, built=False, **meta):
    directory = layout.images / f"{kernel}-{flavour}-k{kernel}"
    image = KernelImage(kernel, flavour, f"k{kernel}", directory)
    if built:
        directory.mkdir(parents=True)
        (directory / "bzImage").write_bytes(b"kernel")
        (directory / "meta.json").write_text(json.dumps(dict(meta, flavour=flavour)))
    return image


def _warm(layout, results):
    for i in range(results):
        path = layout.ccache / f"{i % 16:x}" / f"{i:06x}R"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"")


def test_a_fresh_machine_counts_every_image_at_the_cold_build_times(layout):
    images = [_image(layout, k, f) for k in ("mainline", "base") for f in ("perf", "debug")]
    planned = buildtime.plan(layout, images)
    assert [(p.image.kernel, p.image.flavour, p.kind) for p in planned] == [
        ("mainline", "perf", "full"), ("mainline", "debug", "full"),
        ("base", "perf", "incremental"), ("base", "debug", "incremental")]
    assert [p.seconds for p in planned] == [buildtime.COLD_BUILD_S[f, k] for f, k in (
        ("perf", "full"), ("debug", "full"), ("perf", "incremental"),
        ("debug", "incremental"))]


def test_built_images_cost_nothing_and_a_kernel_in_the_object_folder_makes_builds_incremental(
        layout):
    (layout.objects / "perf").mkdir(parents=True)
    (layout.objects / "perf" / "vmlinux").write_bytes(b"")
    images = [_image(layout, "mainline", "perf", built=True, build_kind="full",
                     build_seconds=700.0),
              _image(layout, "base", "perf")]
    planned = buildtime.plan(layout, images)
    assert [(p.kind, p.seconds) for p in planned] == [
        ("", 0.0), ("incremental", buildtime.COLD_BUILD_S["perf", "incremental"])]


def test_a_warm_compiler_cache_takes_the_times_of_earlier_builds_of_the_same_kind(layout):
    _warm(layout, buildtime.WARM_CACHE_RESULTS)
    (layout.objects / "debug").mkdir(parents=True)
    (layout.objects / "debug" / "vmlinux").write_bytes(b"")
    for kernel, seconds in (("a", 60.0), ("b", 90.0), ("c", 400.0)):
        _image(layout, kernel, "debug", built=True, build_kind="incremental",
               build_seconds=seconds)
    [planned] = buildtime.plan(layout, [_image(layout, "piggin", "debug")])
    assert (planned.kind, planned.seconds) == ("incremental", 90.0)
    # the same history with an empty cache: every compile misses, so the cold time
    for path in layout.ccache.rglob("*R"):
        path.unlink()
    [planned] = buildtime.plan(layout, [_image(layout, "piggin", "debug")])
    assert planned.seconds == buildtime.COLD_BUILD_S["debug", "incremental"]


def test_a_fresh_clone_takes_the_cold_builds_of_the_reference_run(layout):
    stages = [{"stage": "image", "kernel": "base", "flavour": "perf", "built": True,
               "kind": "incremental", "cache": "cold", "seconds": 300.0},
              {"stage": "image", "kernel": "chinner", "flavour": "perf", "built": True,
               "kind": "incremental", "cache": "warm", "seconds": 40.0},
              {"stage": "image", "kernel": "piggin", "flavour": "perf", "built": False,
               "kind": "", "cache": "cold", "seconds": 0.1}]
    layout.reference.mkdir(parents=True)
    (layout.reference / "manifest.json").write_text(json.dumps({"timing": {"stages": stages}}))
    (layout.objects / "perf").mkdir(parents=True)
    (layout.objects / "perf" / "vmlinux").write_bytes(b"")
    [planned] = buildtime.plan(layout, [_image(layout, "piggin", "perf")])
    assert (planned.kind, planned.cache, planned.seconds) == ("incremental", "cold", 300.0)


def test_compare_counts_every_image_from_the_start_and_times_each(layout, monkeypatch, capsys):
    from harness.kernels import kbuild
    from harness.run import compare
    from harness.run.stages import Stages
    images = [_image(layout, "mainline", "perf", built=True, build_kind="full",
                     build_seconds=700.0)]
    images += [_image(layout, k, f) for k, f in (("mainline", "debug"), ("base", "perf"))]
    planned = buildtime.plan(layout, images)
    monkeypatch.setattr(kbuild, "build", lambda layout, kernel, flavour, build_missing: next(
        i for i in images if (i.kernel, i.flavour) == (kernel, flavour)))
    stages = Stages()
    built = compare.build_images(layout, planned, stages, after_s=600.0, build_missing=False)
    assert set(built) == {("mainline", "perf"), ("mainline", "debug"), ("base", "perf")}
    said = [line.split("] ", 1)[1] for line in capsys.readouterr().err.splitlines()]
    cold = buildtime.COLD_BUILD_S
    left = cold["debug", "full"] + cold["perf", "full"] + 600  # no kernel in obj/perf yet
    assert said[0] == ("image 1/3: mainline/perf: built; about "
                       f"{compare.progress.format_duration(left)} left in all")
    assert said[1].startswith("image 2/3: mainline/debug: full build, about ")
    assert said[2].startswith("image 3/3: base/perf: full build, about ")
    assert [(s["stage"], s["kernel"], s["built"]) for s in stages.entries] == [
        ("image", "mainline", False), ("image", "mainline", True), ("image", "base", True)]
