"""Config fragments must survive into .config; image keys follow their inputs."""

import dataclasses
import json
import os
import subprocess

import pytest

from harness.kernels import kbuild, series, source
from harness.layout import REPO_ROOT, Layout, default_layout


def test_dropped_option_names_fragment_and_line(tmp_path):
    frag = tmp_path / "x.config"
    frag.write_text("# comment\nCONFIG_A=y\n# CONFIG_B is not set\nCONFIG_C=16\n")
    dotconfig = "CONFIG_A=y\nCONFIG_B=y\nCONFIG_C=16\n"
    problems = kbuild.config_problems([frag], dotconfig)
    assert [(p.lineno, p.wanted, p.got) for p in problems] == [(3, "CONFIG_B=n", "y")]


def test_fragment_syntax_error_names_line(tmp_path):
    frag = tmp_path / "bad.config"
    frag.write_text("CONFIG_A=y\nCONFIG A\n")
    with pytest.raises(kbuild.BuildError, match=r"bad.config:2: not a config line"):
        kbuild.parse_fragment(frag)


def test_shipped_fragments_ask_for_what_the_design_needs():
    wanted = {}
    for flavour in kbuild.FLAVOURS:
        for path in kbuild.fragments(default_layout(), flavour):
            wanted[flavour, path.name] = kbuild.parse_fragment(path)
    guest = wanted["debug", "guest.config"]
    for option in ("CONFIG_SMP", "CONFIG_ACPI", "CONFIG_VIRTIO_BLK", "CONFIG_EXT4_FS",
                   "CONFIG_TMPFS", "CONFIG_FHANDLE", "CONFIG_INOTIFY_USER", "CONFIG_SLUB"):
        assert guest[option][1] == "y", option
    debug = wanted["debug", "debug.config"]
    for option in ("CONFIG_PROVE_LOCKING", "CONFIG_LOCK_STAT", "CONFIG_DEBUG_ATOMIC_SLEEP"):
        assert debug[option][1] == "y", option
    assert wanted["perf", "perf.config"]["CONFIG_LOCK_STAT"][1] == "n"


def test_faults_is_the_sanitize_configuration_plus_fault_injection():
    names = [p.name for p in kbuild.fragments(default_layout(), "faults")]
    assert names == ["guest.config", "sanitize.config", "faults.config"]
    faults = kbuild.parse_fragment(default_layout().configs / "faults.config")
    for option in ("CONFIG_FAULT_INJECTION", "CONFIG_FAILSLAB", "CONFIG_FAIL_PAGE_ALLOC",
                   "CONFIG_FAIL_MAKE_REQUEST", "CONFIG_FAULT_INJECTION_DEBUG_FS"):
        assert faults[option][1] == "y", option
    assert "faults" in kbuild.LOCKDEP_FLAVOURS


def test_image_key_changes_with_patch_content(tmp_path):
    info = source.SourceInfo("6.1.192-3", "6.1.192", "pristine/6.1.192-3")
    frags = kbuild.fragments(default_layout(), "debug")
    patch = tmp_path / "0001-x.patch"
    patch.write_text("one")
    kernel = series.Kernel("base", (series.Patch("base", 1, patch),))
    key1 = kbuild.image_key(info, kernel, "debug", frags)
    assert kbuild.image_key(info, kernel, "debug", frags) == key1
    assert kbuild.image_key(info, kernel, "perf", frags) != key1
    patch.write_text("two")
    assert kbuild.image_key(info, kernel, "debug", frags) != key1


def test_the_perf_flavour_carries_the_tcg_cs_markers_and_debug_does_not():
    """tcg-cs boots run the perf image: its key is that of the kernel plus the marker
    patch, the key the separate measurement image had, so such an image is reused."""
    layout = default_layout()
    base = series.resolve(layout, "base")
    perf = kbuild.flavoured(base, "perf")
    assert perf.patches == base.patches + (series.Patch("tcg-cs", 1, kbuild.MARKER_PATCH),)
    assert kbuild.flavoured(base, "debug") == base
    assert kbuild.MARKER_PATCH.is_file()
    meta = {"patches": [{"series": p.series, "file": p.path.name} for p in perf.patches]}
    # The kernel's own patches: the stable fixes every kernel carries, then base's.
    assert [p["series"] for p in kbuild.own_patches(meta)] == [p.series for p in base.patches]
    assert {p.series for p in base.patches} == {"stable", "base"}


def test_an_images_identity_digests_its_own_patches_as_the_series_does(tmp_path):
    """A soak's summary names its images by kbuild.identity; the digest must be the
    series' own, and the same for the perf image (tcg-cs markers) and the debug one."""
    info = source.SourceInfo("6.1.192-3", "6.1.192", "pristine/6.1.192-3")
    piggin = series.resolve(default_layout(), "piggin")
    identities = []
    for flavour in ("debug", "perf"):
        folder = tmp_path / flavour
        folder.mkdir()
        meta = kbuild.image_meta("piggin", flavour, "k", info, "c0ffee",
                                 kbuild.flavoured(piggin, flavour))
        (folder / "meta.json").write_text(json.dumps(meta))
        identities.append(kbuild.identity(kbuild.KernelImage("piggin", flavour, "k", folder)))
    debug, perf = identities
    assert debug == perf
    assert debug.patches == len(piggin.patches) > 0
    assert debug.patches_digest == piggin.patch_digest[:16]
    assert debug.patches_digest != series.resolve(default_layout(), "chinner").patch_digest[:16]


def test_the_same_patches_under_another_name_reuse_the_image(tmp_path, monkeypatch):
    info = source.SourceInfo("6.1.192-3", "6.1.192", "pristine/6.1.192-3")
    monkeypatch.setattr(source, "ensure_package", lambda: info.package_version)
    layout = Layout(repo=REPO_ROOT, build=tmp_path / "build", ccache=tmp_path / "ccache",
                    results=tmp_path / "results")
    key = kbuild.image_key(info, series.resolve(layout, "base"), "debug",
                           kbuild.fragments(layout, "debug"))
    built = layout.images / f"base-debug-{key}"
    built.mkdir(parents=True)
    (built / "bzImage").write_bytes(b"kernel")
    (built / "meta.json").write_text("{}")
    image = kbuild.build(layout, "piggin@0", "debug")  # base plus no piggin patch
    assert image.directory == built and image.kernel == "piggin@0"


def test_an_interrupted_make_leaves_no_process_behind(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    # A unique sleep to look for; make runs it in a child shell.
    (src / "Makefile").write_text("all:\n\t@echo started; sleep 37.25; echo never\n")
    layout = Layout(repo=REPO_ROOT, build=tmp_path, ccache=tmp_path / "ccache",
                    results=tmp_path / "results")

    def interrupt(line):
        if line.startswith("started"):
            raise KeyboardInterrupt

    with open(tmp_path / "log", "w") as log, pytest.raises(KeyboardInterrupt):
        kbuild.run_make(layout, tmp_path / "obj", ["all"], log, dict(os.environ),
                        on_line=interrupt)
    left = subprocess.run(["pgrep", "-f", "sleep 37.25"], capture_output=True, text=True)
    assert left.stdout == ""


def test_build_progress_counts_compile_steps_and_estimates_the_time_left():
    log = REPO_ROOT / "harness" / "test_data" / "kbuild" / "captured-make-bzImage-head.log"
    # The same kind of build took 136 steps last time.
    meter = kbuild.BuildProgress("base/perf", "incremental", 136, started=1000.0)
    said = [meter.line(line, 1000.0 + i * 0.01) for i, line in enumerate(log.read_text()
                                                                      .splitlines())]
    assert said[0] == "  base/perf: 0/136 steps (incremental build)"
    assert not any(said[1:])  # at most one line every 30 s
    assert meter.seen == 68  # CC, AS, LD, AR lines; SYNC, GEN and HOSTCC are not steps
    # Half the steps in 60 s: about as long again.
    assert meter.line("", 1060.0) == \
        "  base/perf: 68/136 steps (incremental build), about 1m00s left"
    # Beyond the last build's count (it was a relink) there is no estimate to give.
    meter.seen = 200
    assert meter.line("", 1100.0) == \
        "  base/perf: 200 steps, more than the 136 of the last incremental build (1m40s)"
    unknown = kbuild.BuildProgress("base/perf", "incremental", 0, started=0.0)
    assert unknown.line("  CC      fs/inode.o", 45.0) == \
        "  base/perf: 1 steps (first incremental build, 45s)"


def test_no_build_finds_an_image_elsewhere_or_names_the_missing_one(tmp_path, layout):
    """--images DIR --no-build: an image another build folder (or a shared cache)
    made is booted as it is; a missing one is an error naming it, never built."""
    if source.installed_package_version() is None:
        pytest.skip(f"{source.PACKAGE} is not installed: no image key to compute")
    layout.configs.mkdir(parents=True)
    for name in ("guest.config", "perf.config"):
        (layout.configs / name).write_text("CONFIG_SMP=y\n")
    store = tmp_path / "shared-images"
    elsewhere = dataclasses.replace(layout, image_store=store)
    with pytest.raises(kbuild.BuildError, match=f"no image of mainline/perf \\(key [0-9a-f]+\\) "
                                                f"in {store}: expected {store}/mainline-perf-"):
        kbuild.build(elsewhere, "mainline", "perf", build_missing=False)
    assert not layout.src.joinpath("Makefile").exists()  # no tree was extracted either
    key = kbuild.image_key(kbuild.source_for_key(False),
                           kbuild.flavoured(series.resolve(layout, "mainline"), "perf"), "perf",
                           kbuild.fragments(layout, "perf"))
    built = store / f"mainline-perf-{key}"
    built.mkdir(parents=True)
    (built / "bzImage").write_bytes(b"kernel")
    (built / "meta.json").write_text("{}")
    image = kbuild.build(elsewhere, "mainline", "perf", build_missing=False)
    assert image.bzimage == built / "bzImage"
