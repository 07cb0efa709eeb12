"""Capture real kernel reports for the parser tests (see README.md here).

Builds mainline debug plus the splat generator patch, boots it once per
kind, and saves each console as harness/test_data/console/captured-splat-KIND.log.

    /usr/bin/python3 harness/test_data/splat/capture.py [KIND...]
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from harness import progress
from harness.boot import qemu
from harness.guest import initramfs
from harness.kernels import kbuild, series  # noqa: E402
from harness.layout import default_layout  # noqa: E402

HERE = Path(__file__).resolve().parent
KINDS = ("circular", "recursive", "inconsistent", "irq-inversion", "irq-order", "bad-unlock",
         "held-lock-freed", "rcu", "sleep-in-atomic", "warn", "bug", "panic")


def main(kinds: list[str]) -> None:
    layout = default_layout()
    patch = series.Patch("splat", 1, HERE / "0001-inode-duel-splat-generator.patch")
    image = kbuild.build_kernel(layout, series.Kernel("splat", (patch,)), "debug",
                                extra_fragments=(HERE / "splat.config",))
    files = initramfs.prepare(layout)
    out = layout.splat
    for kind in kinds:
        plan = out / f"{kind}.sh"
        plan.parent.mkdir(parents=True, exist_ok=True)
        # From a child shell: 'bug' kills the writer, which must not be init.
        plan.write_text(f"sh -c 'echo {kind} > /proc/inode_duel_splat'\nsleep 1\n")
        spec = qemu.BootSpec(image.bzimage, files.initramfs, plan, qemu.Machine("tcg", 2), 120)
        outcome = qemu.boot(spec, out / kind)
        target = layout.repo / "harness" / "test_data" / "console" / f"captured-splat-{kind}.log"
        target.write_bytes((out / kind / "console.log").read_bytes())
        progress.say(f"{kind}: exit {outcome.exit_code}, {target.name}")


if __name__ == "__main__":
    main(sys.argv[1:] or list(KINDS))
