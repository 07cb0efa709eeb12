# inode-duel: build the kernels, boot them in QEMU, measure, compare.
#
#   make compare   [KERNELS="mainline base ..."] [CPUS="1 2"] [REPEAT=3] [WORKLOADS=default|all|names|default,NAME]
#   make duel                           the reference's matrix: compare with DUEL=1 (both pairs)
#   make kernels   [KERNELS=...]        build (or find cached) perf and debug images
#   make soak DURATION=1h               random mixes on the debug, sanitize and kcsan kernels
#   make faults [DURATION=2h]           fault injection in the inode cache, mainline the control
#   make kcsan [BUDGET=18m]             data races (KCSAN) on every kernel, mainline the control
#   make bisect-check SERIES=NAME       every patch of a series builds, boots, passes checkpatch
#   make synchole-check                 syncrace against base's old sync hole (a mutant) and base, widened alike
#   make race-gate                      syncrace at 8 vCPUs, 600 s, every kernel, both spinlocks: 6.1's dcache race
#   make slides    [RUN_DIR=...]        slides.pdf of a run (default: the latest)
#   make test                           unit tests and the end-to-end boot test
#   make clean                          remove build/ (kernel tree, objects, images)
#
# Knobs: KERNELS (default: every kernel whose series exists; NAME@* bisects),
# CPUS (default: 1 and 2, never more than the host's cores unless you ask),
# REPEAT (perf boots per kernel and vCPU count), DEBUG_REPEAT, ICOUNT_REPEAT,
# CS_REPEAT (tcg-cs boots per kernel: critical-section lengths; 0 skips them),
# ORDER_SEED (the kernels' order in each round of timed boots; the manifest keeps it),
# COUNT_CPUS (vCPUs of the debug-only count boots of the workloads that ask for
# them, never timed; default 4; none skips them),
# WORKLOADS, FLAVOURS, BASELINE, FULL=1 (base too, all workloads, REPEAT=5,
# ICOUNT_REPEAT=3), DUEL=1 (make duel: the historical pair chinner-2.6.39 and
# piggin-2010 too, DUEL_REPEAT=6 timed rounds of chinner and piggin, DEBUG_REPEAT=3,
# RR_REPEAT=1 tcg-cs-rr boots, and the duel's own workloads), DUEL_REPEAT, RR_REPEAT,
# V=1 (echo the guest console), IMAGES=DIR (kernel images
# from another build folder or a shared cache), NO_BUILD=1 (never build a
# kernel: a missing image is an error naming it), WORKLOADS_DIR=DIR[:DIR...]
# (workload declarations from folders of your own instead of workloads/).
# On a cluster: EXECUTOR=slurm SLURM_PARTITION=name [SLURM_SHARED=dir seen by
# every node, default RESULTS_DIR/slurm] [SLURM_OPTIONS="--account=x ..."].
# Kernel builds over distcc: DISTCC_HOSTS="host/N ..." (in the environment).

PYTHON ?= /usr/bin/python3
# Knobs are passed on only when set: their defaults live in harness/run/matrix.py.
KERNELS ?=
CPUS ?=
REPEAT ?=
DEBUG_REPEAT ?=
ICOUNT_REPEAT ?=
CS_REPEAT ?=
ORDER_SEED ?=
COUNT_CPUS ?=
WORKLOADS ?=
FLAVOURS ?=
RUN_DIR ?=
BASELINE ?=
FULL ?=
DUEL ?=
DUEL_REPEAT ?=
RR_REPEAT ?=
DURATION ?=
BUDGET ?=
SEED ?=
V ?=
IMAGES ?=
NO_BUILD ?=
WORKLOADS_DIR ?=
EXECUTOR ?=
SLURM_PARTITION ?=
SLURM_SHARED ?=
SLURM_OPTIONS ?=

HARNESS = $(PYTHON) -m harness
PACKAGES = linux-source-6.1 qemu-system-x86 ccache busybox-static gnuplot-nox \
	graphviz python3-pytest flex bison libelf-dev libssl-dev bc e2fsprogs xfsprogs gcc make \
	gcc-powerpc64-linux-gnu librsvg2-bin poppler-utils \
	slurm-wlm munge distcc python3-mypy python3-pyflakes
# And the packages the workloads declare (packages = ... in workloads/*.wl:
# fio, fsmark, dbench, stress-ng, ...), as the harness reads them. A broken
# declaration gives none here; check-workloads then names its file and line.
WORKLOADS_DIR_ARG = $(if $(WORKLOADS_DIR),--workloads-dir '$(WORKLOADS_DIR)')
WORKLOAD_PACKAGES := $(shell $(PYTHON) -m harness workload-packages $(WORKLOADS_DIR_ARG) 2>/dev/null)
ALL_PACKAGES = $(PACKAGES) $(WORKLOAD_PACKAGES)
DEPS_STAMP = build/.deps-$(shell echo $(ALL_PACKAGES) | md5sum | cut -c1-8)

.PHONY: compare duel soak faults kcsan report slides reference kernels bisect-check compile-check test test-extra unit-test clean deps check-workloads padlock-image padlock-sweep synchole-check race-gate

# Only the knobs that were set, on one line: the echoed command is what ran.
COMPARE_KNOBS = $(strip $(if $(KERNELS),--kernels $(KERNELS)) $(if $(CPUS),--cpus $(CPUS)) \
	$(if $(REPEAT),--repeat $(REPEAT)) $(if $(DEBUG_REPEAT),--debug-repeat $(DEBUG_REPEAT)) \
	$(if $(ICOUNT_REPEAT),--icount-repeat $(ICOUNT_REPEAT)) $(if $(FULL),--full) \
	$(if $(DUEL),--duel) $(if $(DUEL_REPEAT),--duel-repeat $(DUEL_REPEAT)) \
	$(if $(RR_REPEAT),--rr-repeat $(RR_REPEAT)) \
	$(if $(CS_REPEAT),--cs-repeat $(CS_REPEAT)) $(if $(ORDER_SEED),--order-seed $(ORDER_SEED)) \
	$(if $(COUNT_CPUS),--count-cpus $(COUNT_CPUS)) \
	$(if $(WORKLOADS),--workloads $(WORKLOADS)) \
	$(if $(FLAVOURS),--flavours $(FLAVOURS)) $(if $(BASELINE),--baseline $(BASELINE)) \
	$(if $(RUN_DIR),--run-dir $(RUN_DIR)) $(if $(V),-v) $(if $(IMAGES),--images $(IMAGES)) \
	$(if $(NO_BUILD),--no-build) $(WORKLOADS_DIR_ARG) $(if $(EXECUTOR),--executor $(EXECUTOR)) \
	$(if $(SLURM_PARTITION),--slurm-partition '$(SLURM_PARTITION)') \
	$(if $(SLURM_SHARED),--slurm-shared '$(SLURM_SHARED)') \
	$(if $(SLURM_OPTIONS),--slurm-options='$(SLURM_OPTIONS)'))
SOAK_KNOBS = $(strip $(if $(KERNELS),--kernels $(KERNELS)) $(if $(FLAVOURS),--flavours $(FLAVOURS)) \
	$(if $(CPUS),--cpus $(CPUS)) $(if $(SEED),--seed $(SEED)) $(WORKLOADS_DIR_ARG))

compare: $(DEPS_STAMP) check-workloads
	$(strip $(HARNESS) compare $(COMPARE_KNOBS))

# The reference's matrix (DUEL=1): both pairs, six timed rounds of the isolated one.
duel: $(DEPS_STAMP) check-workloads
	$(strip $(HARNESS) compare --duel $(COMPARE_KNOBS))

# Random workload mixes on the debug, sanitize and kcsan kernels until DURATION is up.
soak: $(DEPS_STAMP) check-workloads
	$(strip $(HARNESS) soak --duration $(or $(DURATION),$(error DURATION=45m|2h|... is required)) $(SOAK_KNOBS))

# Fault injection in the inode cache on the faults kernels, mainline the control:
# one round of every faults workload and filesystem, or rounds until DURATION is up.
FAULTS_KNOBS = $(strip $(if $(KERNELS),--kernels $(KERNELS)) $(if $(CPUS),--cpus $(CPUS)) \
	$(if $(DURATION),--duration $(DURATION)) $(if $(SEED),--seed $(SEED)) $(WORKLOADS_DIR_ARG))
faults: $(DEPS_STAMP) check-workloads
	$(strip $(HARNESS) faults $(FAULTS_KNOBS))

# Every kernel's kcsan image over every default workload at 2 and 4 vCPUs; cells
# keep what is measured, so BUDGET=18m measures in parts (run it again to go on).
KCSAN_KNOBS = $(strip $(if $(KERNELS),--kernels $(KERNELS)) $(if $(CPUS),--cpus $(CPUS)) \
	$(if $(BUDGET),--budget $(BUDGET)) $(WORKLOADS_DIR_ARG))
kcsan: $(DEPS_STAMP) check-workloads
	$(strip $(HARNESS) kcsan $(KCSAN_KNOBS))

report:
	$(HARNESS) report $(RUN_DIR) $(if $(BASELINE),--baseline $(BASELINE))

# A PDF deck (at most 12 slides) of the latest run or RUN_DIR: RUN_DIR/slides.pdf.
slides: $(DEPS_STAMP)
	$(HARNESS) slides $(RUN_DIR) $(if $(BASELINE),--baseline $(BASELINE))

# Publish the latest run (or RUN_DIR) as the committed reference run.
reference:
	$(HARNESS) reference $(RUN_DIR)

kernels: $(DEPS_STAMP)
	$(HARNESS) build $(KERNELS) $(foreach f,$(FLAVOURS),--flavour $(f))

bisect-check: $(DEPS_STAMP)
	$(HARNESS) bisect-check $(or $(SERIES),$(error SERIES=stable|base|chinner|piggin is required))

compile-check: $(DEPS_STAMP)
	$(HARNESS) compile-check $(or $(KERNEL),$(error KERNEL= is required)) $(if $(GREP),--grep '$(GREP)')

check-workloads:
	$(strip $(HARNESS) check-workloads $(WORKLOADS_DIR_ARG))

# The image the boot tests boot (test_boot, test_byob_boot, test_slurm, ...):
# built or found before pytest starts, with the same progress lines and
# estimate as make compare, instead of minutes of silence inside a test.
TEST_KERNEL = mainline --flavour debug

# The padlock measurement kernel (mainline + padlock/: the sb-list section
# padded by a knob, its contention counted without lockdep), built only when
# asked, never by make test or a compare; padlock-sweep boots it at 2 vCPUs
# (timed: run it on a quiet host). docs/scaling-model.md, "At 2 vCPUs".
padlock-image: $(DEPS_STAMP)
	$(PYTHON) -m harness.run.padsweep --build-only

padlock-sweep: $(DEPS_STAMP)
	$(PYTHON) -m harness.run.padsweep $(if $(LOOPS),--loops "$(LOOPS)") $(if $(OPS),--ops $(OPS)) \
		$(if $(NO_BUILD),--no-build)

# base's sync hole put back in a mutant kernel (base + synchole/0001-0002: the
# window widened by a knob, the inodes it opened it on listed) and base as it
# is widened as much (base + synchole/0001, the control): does the widened
# mutant lose a file inside a window on its inode, and the control none (held
# open on dirty inodes when widened)? Two debug boots at 4 vCPUs, never timed,
# never part of make test or a compare (issues 28, 39).
synchole-check: $(DEPS_STAMP) check-workloads
	$(PYTHON) -m harness.run.synchole $(if $(DELAYS),--delays "$(DELAYS)") \
		$(if $(SECONDS),--seconds $(SECONDS)) $(if $(NO_BUILD),--no-build)

# 6.1's dcache race (series-stable/0001) under both spinlocks: syncrace on every
# kernel's debug image, 8 vCPUs (GATE_CPUS), 600 s; never timed (issue 39).
race-gate: $(DEPS_STAMP)
	$(PYTHON) -m harness.run.racegate $(if $(KERNELS),--kernels $(KERNELS)) \
		$(if $(LOCKS),--locks $(LOCKS)) $(if $(SECONDS),--seconds $(SECONDS)) \
		$(if $(GATE_CPUS),--cpus $(GATE_CPUS)) $(if $(NO_BUILD),--no-build)

# What CI runs: every test but those that need another kernel build.
test: $(DEPS_STAMP)
	$(HARNESS) build $(TEST_KERNEL)
	$(PYTHON) -m pytest -ra -m "not extra_image" harness/tests

# The tests that build and boot further images (mainline perf, for the tcg-cs mode).
test-extra: $(DEPS_STAMP)
	$(PYTHON) -m pytest -ra -m extra_image harness/tests

# Pure: no kernel tree, no QEMU, nothing installed.
unit-test:
	$(PYTHON) -m pytest -ra -m "not boot and not tree and not extra_image" harness/tests

deps: $(DEPS_STAMP)

# Installs what is missing with apt-get; the stamp is per package list, so a
# workload declaring a new package installs it on the next make.
$(DEPS_STAMP):
	@missing=$$(for p in $(ALL_PACKAGES); do \
		dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; \
	done); \
	if [ -n "$$missing" ]; then \
		echo "installing: $$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi
	@mkdir -p build && touch $@

clean:
	rm -rf build
