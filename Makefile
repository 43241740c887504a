# faultline front door. `make demo` and `make test` work on a fresh Debian bookworm machine.
JOBS       ?= $(shell nproc)
BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_SECONDS ?= 10
CMAKE_GEN  := -G Ninja

.PHONY: all deps build demo test unit asan fuzz fuzz-run bench lint package clean

all: build

deps:
	@scripts/deps.sh

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo

build: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

# Only what the demo runs: the two programs and the fake NVML library (no tests, no benchmarks).
DEMO_TARGETS := faultline faultline-sim fake_nvml

demo: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS) --target $(DEMO_TARGETS)
	@scripts/demo.sh $(BUILD)/faultline

# Unit + pipeline + end-to-end tests, then the same under ASan/UBSan, then brief fuzzing.
test:
	@scripts/deps.sh --test
	@scripts/test.sh

unit: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

# One clang build for both: the suite under ASan+UBSan, and the libFuzzer targets.
fuzz: deps
	CC=clang CXX=clang++ cmake -S . -B $(ASAN_BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Debug \
	  -DFAULTLINE_SANITIZE=ON -DFAULTLINE_FUZZ=ON -DFAULTLINE_BUILD_BENCH=OFF
	cmake --build $(ASAN_BUILD) -j $(JOBS)

asan: fuzz
	ctest --test-dir $(ASAN_BUILD) --output-on-failure -j $(JOBS)

fuzz-run: fuzz
	@scripts/fuzz.sh $(ASAN_BUILD) $(FUZZ_SECONDS)

bench: build
	@scripts/bench.sh $(BUILD)

lint:
	@scripts/lint.sh

# The .deb (docs/install.md): the faultline binary, its man pages and data from $(BUILD),
# packed by CPack into $(BUILD)/faultline_<version>_<arch>.deb. Builds only what it packs.
package: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS) --target faultline faultline_dist
	cd $(BUILD) && cpack --config CPackConfig.cmake

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) build-fuzz build-prod
