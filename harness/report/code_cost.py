"""Cost in code: what each series costs to review and to maintain, counted from
the series the run built, at report time.

Two scopes, named in every row:

  review    the series' own patches (chinner and piggin on top of base, base on
            top of 6.1): what a reviewer reads;
  tree      the kernel the run built against pristine 6.1 (base's patches plus
            the series'; series-stable's fixes, which mainline carries too, are
            in neither scope): what stays in the tree to maintain.

Where each number comes from, so it survives on a machine without the tree:

  patch text        RUN_DIR/series/NAME/*.patch (run_inputs copies them there
                    the first time, checked against manifest.json): diffstat from
                    `git apply --numstat`, pattern counts from patch_text. Always
                    recomputed.
  the kernel tree   checkpatch.pl and the lock-order comment of fs/inode.c need
                    build/src; measured the first time a report is written where
                    it exists and kept in RUN_DIR/code-cost.json.
  compile-check     series-NAME/compile-check.json, written by `make
                    compile-check` for the patches it compiled; copied into
                    RUN_DIR/code-cost.json when its patches are the run's.
  the run           lock classes lockdep saw (lockorder.json) and the allowed
                    edges of the run's lock-order files.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from harness import lockorder, progress
from harness.kernels import bisect_check, series
from harness.layout import Layout
from harness.report import patch_text, run_inputs

COST_FILE = "code-cost.json"
COMPILE_CHECK_FILE = "compile-check.json"
CORE_FILES = ("fs/inode.c", "include/linux/fs.h")
# A comment block of fs/inode.c that documents the icache locking: 6.1's
# "Inode locking rules: ... Lock ordering:" header and its successors.
LOCK_DOC = re.compile(r"lock(ing)? rules|lock order", re.I)


@dataclass
class SeriesCost:
    name: str
    patches: list[run_inputs.RunPatch]
    own: list[patch_text.PatchCounts]  # per patch of the series itself
    below: list[patch_text.PatchCounts]  # the patches under it (base's, for chinner)
    checkpatch: tuple[int, int] | None  # errors, warnings over the series' own patches
    lock_doc_lines: int | None
    compile_check: dict | None
    lock_classes: list[str] | None  # icache classes lockdep saw in the kernel
    allowed_edges: int | None
    allowed_unseen_roles: int  # allowed edges naming a lock lockdep never saw here
    lock_order_shown_as: str = ""
    missing: list[str] = field(default_factory=list)  # patch files the run folder lacks

    def review(self, attr: str) -> int:
        return sum(getattr(c, attr) for c in self.own)

    def tree(self, attr: str) -> int:
        return sum(getattr(c, attr) for c in self.own + self.below)

    @property
    def files(self) -> list[str]:
        return sorted({f for c in self.own for f, _, _ in c.files})


def _tree_available(layout: Layout) -> bool:
    return (layout.src / "scripts" / "checkpatch.pl").is_file()


def _checkpatch(layout: Layout, patches: list[run_inputs.RunPatch]) -> list[dict]:
    out = []
    for p in patches:
        errors, warnings, _ = bisect_check.checkpatch(
            layout, series.Patch(p.series, p.index, p.path))
        out.append({"file": p.file, "sha256": p.sha256, "errors": errors,
                    "warnings": warnings})
    return out


def _lock_doc_lines(text: str) -> int:
    """Lines of the comment blocks of a C file that document lock rules or order."""
    total = 0
    for block in re.findall(r"/\*.*?\*/", text, re.S):
        if LOCK_DOC.search(block):
            total += block.count("\n") + 1
    return total


def _inode_c_after(layout: Layout, tag: str, patches: list[run_inputs.RunPatch]) -> str:
    """fs/inode.c of pristine 6.1 with the patches applied (only that file)."""
    pristine = subprocess.run(["git", "-C", str(layout.src), "show", f"{tag}:fs/inode.c"],
                              capture_output=True, text=True, check=True).stdout
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "fs" / "inode.c"
        target.parent.mkdir()
        target.write_text(pristine)
        for p in patches:
            applied = subprocess.run(["git", "apply", "--include=fs/inode.c", str(p.path)],
                                     cwd=tmp, capture_output=True, text=True)
            if applied.returncode != 0:
                raise patch_text.PatchTextError(
                    f"{p.path}: fs/inode.c part does not apply on {tag}: "
                    f"{applied.stderr.strip()}")
        return target.read_text()


def _pristine_tag(manifest: dict) -> str:
    versions = sorted({k["package_version"] for k in manifest["kernels"].values()})
    return f"pristine/{versions[0]}"


def tree_facts(layout: Layout, run_dir: Path, manifest: dict,
               patches: dict[str, list[run_inputs.RunPatch]]) -> dict:
    """RUN_DIR/code-cost.json: what needs the kernel tree or the compile-check,
    measured once and kept with the run."""
    path = run_dir / COST_FILE
    facts = json.loads(path.read_text()) if path.exists() else {}
    changed = False
    tree = _tree_available(layout)
    tag = _pristine_tag(manifest)
    have_tag = tree and subprocess.run(["git", "-C", str(layout.src), "rev-parse", "-q",
                                        "--verify", tag], capture_output=True).returncode == 0
    if have_tag and "mainline_lock_doc_lines" not in facts:
        facts["mainline_lock_doc_lines"] = _lock_doc_lines(_inode_c_after(layout, tag, []))
        facts["tree"] = tag
        changed = True
    for name, own in patches.items():
        entry = facts.setdefault("series", {}).setdefault(name, {})
        complete = all(p.path for p in own)
        if tree and complete and "checkpatch" not in entry:
            progress.say(f"code cost: checkpatch.pl on the {len(own)} patches of {name}")
            entry["checkpatch"] = _checkpatch(layout, own)
            changed = True
        stack = patches.get(series.parent_of(name), []) if name != "base" else []
        if have_tag and complete and all(p.path for p in stack) and "lock_doc_lines" not in entry:
            entry["lock_doc_lines"] = _lock_doc_lines(_inode_c_after(layout, tag, stack + own))
            changed = True
        compiled = compile_check_for(layout, name, manifest)
        if compiled and entry.get("compile_check") != compiled:
            entry["compile_check"] = compiled
            changed = True
    if changed:
        path.write_text(json.dumps(facts, indent=1, sort_keys=True) + "\n")
    return facts


def patch_digest(entries: list[dict]) -> str:
    """series.Kernel.patch_digest of a manifest's patch list."""
    h = hashlib.sha256()
    for p in entries:
        h.update(f"{p['series']}/{p['file']}:{p['sha256']}\n".encode())
    return h.hexdigest()


def compile_check_for(layout: Layout, name: str, manifest: dict) -> dict | None:
    """The compile-check of this series for exactly the run's patches, if one was made
    (series-NAME/compile-check.json; without --grep preferred)."""
    info = manifest["kernels"].get(name)
    path = layout.series_dir(name) / COMPILE_CHECK_FILE
    if not info or not path.is_file():
        return None
    digest = patch_digest(info["patches"])
    results = [r for r in json.loads(path.read_text()) if r.get("patch_digest") == digest]
    results.sort(key=lambda r: (bool(r.get("grep")), r.get("measured", "")))
    return results[0] if results else None


def lock_classes(conformance: dict, kernel: str) -> list[str] | None:
    info = conformance.get(kernel)
    if not info or not info.get("edges"):
        return None
    return sorted({lockorder.base_name(name) for e in info["edges"] for name in e[:2]})


def costs(layout: Layout, run_dir: Path, manifest: dict, conformance: dict) -> list[SeriesCost]:
    patches = run_inputs.patches(layout, run_dir, manifest)
    facts = tree_facts(layout, run_dir, manifest, patches)
    out = []
    for name in [n for n in series.SERIES_NAMES if n in patches]:
        own = patches[name]
        stack = patches.get(series.parent_of(name), []) if name != "base" else []
        missing = [p.file for p in own + stack if not p.path]
        entry = facts.get("series", {}).get(name, {})
        checked = entry.get("checkpatch")
        source = run_inputs.lock_order(layout, run_dir, name,
                                       conformance.get(name, {}).get("lock_order_file"))
        seen_roles = {r for e in conformance.get(name, {}).get("edges", []) for r in e[2:]}
        allowed = source.order.allowed if source.order else frozenset()
        out.append(SeriesCost(
            name=name, patches=own,
            own=[patch_text.count(p.path) for p in own if p.path],
            below=[patch_text.count(p.path) for p in stack if p.path],
            checkpatch=(sum(c["errors"] for c in checked), sum(c["warnings"] for c in checked))
            if checked else None,
            lock_doc_lines=entry.get("lock_doc_lines"),
            compile_check=entry.get("compile_check"),
            lock_classes=lock_classes(conformance, name),
            allowed_edges=len(allowed) if source.order else None,
            allowed_unseen_roles=sum(1 for e in allowed if seen_roles and
                                     not set(e) <= seen_roles),
            lock_order_shown_as=source.shown_as, missing=missing))
    return out


def mainline_lock_doc_lines(run_dir: Path) -> int | None:
    path = run_dir / COST_FILE
    return json.loads(path.read_text()).get("mainline_lock_doc_lines") if path.exists() else None
