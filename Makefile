# inode-duel: build the kernels, boot them in QEMU, measure, compare.
#
#   make compare   [KERNELS="mainline base ..."] [CPUS="1 2"] [REPEAT=3] [WORKLOADS=default|all|names]
#   make kernels   [KERNELS=...]        build (or find cached) perf and debug images
#   make bisect-check SERIES=NAME       every patch of a series builds, boots, passes checkpatch
#   make test                           unit tests and the end-to-end boot test
#   make clean                          remove build/ (kernel tree, objects, images)
#
# Knobs: KERNELS (default: every kernel whose series exists; NAME@* bisects),
# CPUS (default: 1 and 2, never more than the host's cores unless you ask),
# REPEAT (perf boots per kernel and vCPU count), DEBUG_REPEAT, ICOUNT_REPEAT,
# CS_REPEAT (tcg-cs boots per kernel: critical-section lengths; 0 skips them),
# WORKLOADS, FLAVOURS, BASELINE, FULL=1 (all workloads, REPEAT=5,
# ICOUNT_REPEAT=3), V=1 (echo the guest console).

PYTHON ?= /usr/bin/python3
# Knobs are passed on only when set: their defaults live in harness/run/matrix.py.
KERNELS ?=
CPUS ?=
REPEAT ?=
DEBUG_REPEAT ?=
ICOUNT_REPEAT ?=
CS_REPEAT ?=
WORKLOADS ?=
FLAVOURS ?=
RUN_DIR ?=
BASELINE ?=
FULL ?=
DURATION ?=
SEED ?=
V ?=

HARNESS = $(PYTHON) -m harness
PACKAGES = linux-source-6.1 qemu-system-x86 ccache busybox-static fio gnuplot-nox \
	graphviz python3-pytest flex bison libelf-dev libssl-dev bc e2fsprogs xfsprogs gcc make
DEPS_STAMP = build/.deps-$(shell echo $(PACKAGES) | md5sum | cut -c1-8)

.PHONY: compare soak report reference kernels bisect-check compile-check test unit-test clean deps check-workloads

compare: $(DEPS_STAMP) check-workloads
	$(HARNESS) compare --kernels $(KERNELS) --cpus $(CPUS) \
		$(if $(REPEAT),--repeat $(REPEAT)) $(if $(DEBUG_REPEAT),--debug-repeat $(DEBUG_REPEAT)) \
		$(if $(ICOUNT_REPEAT),--icount-repeat $(ICOUNT_REPEAT)) $(if $(FULL),--full) \
		$(if $(CS_REPEAT),--cs-repeat $(CS_REPEAT)) \
		--workloads $(WORKLOADS) --flavours $(FLAVOURS) $(if $(BASELINE),--baseline $(BASELINE)) \
		$(if $(RUN_DIR),--run-dir $(RUN_DIR)) $(if $(V),-v)

# Random workload mixes on the debug and sanitize kernels until DURATION is up.
soak: $(DEPS_STAMP) check-workloads
	$(HARNESS) soak --duration $(or $(DURATION),$(error DURATION=45m|2h|... is required)) \
		--kernels $(KERNELS) --flavours $(FLAVOURS) --cpus $(CPUS) $(if $(SEED),--seed $(SEED))

report:
	$(HARNESS) report $(RUN_DIR) $(if $(BASELINE),--baseline $(BASELINE))

# Publish the latest run (or RUN_DIR) as the committed reference run.
reference:
	$(HARNESS) reference $(RUN_DIR)

kernels: $(DEPS_STAMP)
	$(HARNESS) build $(KERNELS) $(foreach f,$(FLAVOURS),--flavour $(f))

bisect-check: $(DEPS_STAMP)
	$(HARNESS) bisect-check $(or $(SERIES),$(error SERIES=base|chinner|piggin is required))

compile-check: $(DEPS_STAMP)
	$(HARNESS) compile-check $(or $(KERNEL),$(error KERNEL= is required)) $(if $(GREP),--grep '$(GREP)')

check-workloads:
	$(HARNESS) check-workloads

test: $(DEPS_STAMP)
	$(PYTHON) -m pytest -ra harness/tests

# Pure: no kernel tree, no QEMU, nothing installed.
unit-test:
	$(PYTHON) -m pytest -ra -m "not boot and not tree" harness/tests

deps: $(DEPS_STAMP)

# Installs what is missing with apt-get; the stamp is per package list.
$(DEPS_STAMP):
	@missing=$$(for p in $(PACKAGES); do \
		dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; \
	done); \
	if [ -n "$$missing" ]; then \
		echo "installing: $$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi
	@mkdir -p build && touch $@

clean:
	rm -rf build
