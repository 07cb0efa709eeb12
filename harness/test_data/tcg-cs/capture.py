"""Capture real tcg-cs plugin output for the tests (see README.md here).

    /usr/bin/python3 harness/test_data/tcg-cs/capture.py [lines] [rr] [hist] [KERNEL]

lines: two 1-vCPU boots of KERNEL's tcg-cs image (default mainline) with
create-unlink on tmpfs and ext4 and igetstorm on ext4; the first finds the
call sites of the sections the tests check line by line (the sb-list add
and removal, the ext4 hash insert, iget's lookups), the second traces them
and is kept as captured-KERNEL-lines.out, with the objdump of the functions
they are in (captured-KERNEL-FUNCTION.objdump).
rr: one boot of 2 vCPUs round robin with reclaim on tmpfs and ext4
(drop_caches' LRU walk trylocks i_lock beside stat lookups), kept as
captured-KERNEL-rr.out.
hist: the plugin's histograms (output version 3): one 1-vCPU boot under
-icount of create-unlink on tmpfs and igetstorm on ext4, lines not tracked
(captured-KERNEL-hist.out), and one boot of 2 vCPUs round robin with
reclaim on tmpfs and hotinode on ext4 with 2 workers, whose spin_locks wait
(captured-KERNEL-hist-rr.out).
KERNEL's perf image must be built: nothing here builds one.
"""

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from harness import lockorder, progress  # noqa: E402
from harness.boot import cs_figures, runner, tcg_cs  # noqa: E402
from harness.guest import initramfs, plan, workloads  # noqa: E402
from harness.kernels import objdump, vmlinux  # noqa: E402
from harness.layout import default_layout  # noqa: E402
from harness.parsers import tcg_cs as parser  # noqa: E402

HERE = Path(__file__).resolve().parent
TRACED_PER_WINDOW = 40
# The functions whose sections the tests check line by line, and the class.
TRACED = (("new_inode", "&s->s_inode_list_lock"), ("evict", "&s->s_inode_list_lock"),
          ("insert_inode_locked", "inode_hash_lock"), ("iget_locked", "inode_hash_lock"))
# Classes whose traced sections are each window's first, one after the
# other (so that W can be checked against the section before); the others
# are spread over the window.
CONSECUTIVE = ("&s->s_inode_list_lock",)


def boot(kernel: str, items: list, cpus: int, options: tcg_cs.Options,
         folder: Path) -> parser.Output:
    layout = default_layout()
    image = tcg_cs.build_image(layout, kernel, build_missing=False)
    files = initramfs.prepare(layout, sorted({w for w, _, _ in items}, key=lambda w: w.name))
    order = lockorder.for_kernel(layout, kernel)
    machine = tcg_cs.machine(layout, image, folder, order, cpus, options)
    record = runner.run_boot(image, files, machine, plan.make_steps(items), folder,
                             "tcg-cs capture", order)
    if record.status != "ok":
        raise SystemExit(f"{folder}: boot {record.status}")
    output = tcg_cs.read_output(folder)
    assert output is not None
    return output


def traced_sites(output: parser.Output,
                 symbols: list[vmlinux.Symbol]) -> dict[int, tuple[str, int]]:
    """The call sites of TRACED: site -> (function+offset, stride), the stride
    spreading TRACED_PER_WINDOW sections over the site's busiest window."""
    sections = [s for w in output.windows.values() for s in w.sections]
    names = cs_figures.site_names(symbols, {s.site for s in sections})
    wanted: dict[int, tuple[str, int]] = {}
    for s in sections:
        function = names.get(s.site, "").split("+")[0]
        if (function, s.lock_class) in TRACED:
            stride = max(1, s.acquisitions // TRACED_PER_WINDOW)
            if s.lock_class in CONSECUTIVE:
                stride = 1
            wanted[s.site] = (names[s.site], max(stride, wanted.get(s.site, ("", 0))[1]))
    return wanted


def save_objdump(kernel: str, image_dir: Path, functions: set[str]) -> None:
    layout = default_layout()
    symbols = vmlinux.read_system_map(image_dir / "System.map")
    key = image_dir.name.rsplit("-", 1)[1]
    elf = vmlinux.cached_elf(image_dir / "bzImage", layout.build / "tcg-cs", key)
    for name, (start, end) in vmlinux.function_ranges(symbols, tuple(functions)).items():
        text = objdump.disassemble_text(elf, start, end)
        (HERE / f"captured-{kernel}-{name}.objdump").write_text(text)


def capture_lines(kernel: str, known: dict) -> None:
    items = [(known["create-unlink"], "tmpfs", 1), (known["create-unlink"], "ext4", 1),
             (known["igetstorm"], "ext4", 1)]
    with tempfile.TemporaryDirectory(prefix="tcg-cs-capture-") as tmp:
        first = boot(kernel, items, 1, tcg_cs.Options(), Path(tmp) / "find")
        image_dir = tcg_cs.image_of_boot(Path(tmp) / "find")
        sites = traced_sites(first, vmlinux.read_system_map(image_dir / "System.map"))
        progress.say("tracing " + ", ".join(f"{name} every {stride}"
                                            for name, stride in sorted(sites.values())))
        options = tcg_cs.Options(trace=tuple((site, stride) for site, (_, stride)
                                             in sorted(sites.items())),
                                 trace_count=TRACED_PER_WINDOW)
        traced = boot(kernel, items, 1, options, Path(tmp) / "trace")
        text = (Path(tmp) / "trace" / tcg_cs.OUTPUT).read_text()
    (HERE / f"captured-{kernel}-lines.out").write_text(text)
    # The functions of the traced call sites, and of the hash walks' loads.
    walks = {insn for w in traced.windows.values() for t in w.traced for insn in t.chain_loads}
    symbols = vmlinux.read_system_map(image_dir / "System.map")
    functions = {name.split("+")[0] for name, _ in sites.values()}
    functions |= {name.split("+")[0] for name in cs_figures.site_names(symbols, walks).values()}
    save_objdump(kernel, image_dir, functions)


def capture_rr(kernel: str, known: dict) -> None:
    items = [(known["reclaim"], "tmpfs", 2), (known["reclaim"], "ext4", 2)]
    with tempfile.TemporaryDirectory(prefix="tcg-cs-capture-") as tmp:
        output = boot(kernel, items, 2, tcg_cs.Options(lines=False), Path(tmp) / "rr")
        text = (Path(tmp) / "rr" / tcg_cs.OUTPUT).read_text()
        system_map = tcg_cs.image_of_boot(Path(tmp) / "rr") / "System.map"
    (HERE / f"captured-{kernel}-rr.out").write_text(text)
    # The System.map lines of the functions the trylock sites are in.
    symbols = vmlinux.read_system_map(system_map)
    sites = {t.site for w in output.windows.values() for t in w.trylocks}
    names = {n.split("+")[0] for n in cs_figures.site_names(symbols, sites).values()}
    (HERE / f"captured-{kernel}-rr.System.map").write_text("".join(
        f"{s.address:016x} {s.kind} {s.name}\n" for s in symbols if s.name in names))


def capture_hist(kernel: str, known: dict) -> None:
    boots = (("hist", [(known["create-unlink"], "tmpfs", 1), (known["igetstorm"], "ext4", 1)], 1),
             ("hist-rr", [(known["reclaim"], "tmpfs", 2), (known["hotinode"], "ext4", 2)], 2))
    for name, items, cpus in boots:
        with tempfile.TemporaryDirectory(prefix="tcg-cs-capture-") as tmp:
            boot(kernel, items, cpus, tcg_cs.Options(lines=False), Path(tmp) / name)
            text = (Path(tmp) / name / tcg_cs.OUTPUT).read_text()
        (HERE / f"captured-{kernel}-{name}.out").write_text(text)


KINDS = ("lines", "rr", "hist")


def main(argv: list[str]) -> int:
    kinds = [a for a in argv if a in KINDS] or ["lines", "rr"]
    kernel = next((a for a in argv if a not in KINDS), "mainline")
    known = workloads.load_all(default_layout().workloads)
    if "lines" in kinds:
        capture_lines(kernel, known)
    if "rr" in kinds:
        capture_rr(kernel, known)
    if "hist" in kinds:
        capture_hist(kernel, known)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
