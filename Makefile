# Thin wrapper over CMake. `make run` and `make test` are the user contract.
BUILD      ?= build
ASAN_BUILD ?= build-asan
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
# One line per build step: the nested makes of CMake's generator inherit this
# and stop printing every "Entering/Leaving directory".
MAKEFLAGS += --no-print-directory

.PHONY: all bootstrap build run test test-unit test-asan test-asan-server bench clean

all: build

bootstrap:
	@bash scripts/bootstrap.sh

build: bootstrap
	@cmake -S . -B $(BUILD) -DCG_WERROR=ON $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

run: build
	@bash scripts/run.sh $(BUILD)

# Warnings-as-errors build + every test through ctest, then the unit tests and the
# server's integration tests (real PostgreSQL, real HTTP) again under
# AddressSanitizer + UndefinedBehaviorSanitizer.
test: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 900
	@$(MAKE) --no-print-directory test-asan

test-asan:
	@cmake -S . -B $(ASAN_BUILD) -DCG_SANITIZE=ON -DCG_WERROR=ON -DCMAKE_BUILD_TYPE=Debug $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(ASAN_BUILD) -j $(JOBS)
	@cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --output-on-failure -j $(JOBS) -L unit --timeout 900
	@$(MAKE) test-asan-server

# The server's HTTP integration tests against the sanitizer build: every report
# (memory error, leak at exit, undefined behaviour) of the server or the CLI goes
# to a private directory, and any report fails the target.
# (not server_scale: its peak-RSS bounds hold for the production build, and the
# sanitizers' shadow memory doubles RSS)
ASAN_SERVER_TESTS ?= server_api server_hardening server_embedded server_export server_faults \
  server_html_sandbox server_compare_campaigns server_views server_blobs server_spill history_sweep
test-asan-server:
	@d=$$(mktemp -d) && for t in $(ASAN_SERVER_TESTS); do \
	  ASAN_OPTIONS=detect_leaks=1:log_path=$$d/asan UBSAN_OPTIONS=print_stacktrace=1:log_path=$$d/ubsan \
	  CG_SOURCE_DIR=$(CURDIR) CG_BINARY_DIR=$(CURDIR)/$(ASAN_BUILD) CG_FIXTURES=$(CURDIR)/tests/fixtures \
	  bash tests/integration/test_$$t.sh >$$d/$$t.out 2>&1 || { tail -40 $$d/$$t.out; rm -rf $$d; exit 1; }; \
	  echo "asan: integration.$$t passed"; done; \
	  if ls $$d/asan* $$d/ubsan* >/dev/null 2>&1; then cat $$d/asan* $$d/ubsan* 2>/dev/null | head -200; rm -rf $$d; exit 1; fi; \
	  rm -rf $$d; echo "asan: no sanitizer reports from the server tests"

bench: build
	@bash bench/run.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
