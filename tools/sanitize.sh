#!/usr/bin/env bash
# Build the native engine (kafkagroup._core and the Cython codec) under AddressSanitizer +
# UndefinedBehaviorSanitizer in a copy of the work tree, and run the tests that exercise it there.
#
#   tools/sanitize.sh                 build build/asan/, run the C++ tests and the engine test suites,
#                                     then the garbage drivers (tools/engine_garbage.py, tools/codec_garbage.py)
#   tools/sanitize.sh build           only (re)build the sanitized copy
#   tools/sanitize.sh cxx             only the C++ doctest program (csrc/tests/), linked against the
#                                     copy's sanitized engine objects (build first)
#   tools/sanitize.sh test [ARGS...]  only run pytest in the copy (ARGS replace the default test list)
#   tools/sanitize.sh garbage         only run the garbage drivers (SANITIZE_CASES per strategy and
#                                     rack mode for the engine, 2x that many groups for the codec)
#   tools/sanitize.sh run CMD...      run a command in the copy's sanitizer environment (cwd: the
#                                     copy; `python` means $PYTHON),
#                                     e.g. tools/sanitize.sh run python tools/garbage_engine.py 20000
#
# Why a copy: the in-place build in the repo (kafkagroup/_core*.so) is what everyone else imports; a
# sanitized .so needs libasan preloaded into the interpreter, so it must never land there.
#
# Layout: build/asan/src/  copy of the tracked + untracked (not ignored) files, built in place;
#         build/asan/bin/  compiler wrappers that append the sanitizer flags to every compile and link;
#         build/asan/shared -> the repo's ../shared (tests find their vectors at <root>/../shared).
#
# Flags are appended by wrappers rather than passed as CFLAGS because setup.py's extra_compile_args
# (-O3) come last on the command line and would win over CFLAGS; Python's own CFLAGS add -fwrapv:
#   -O1 -g -fno-omit-frame-pointer    readable stacks;
#   -fno-wrapv                        Python builds with -fwrapv, which switches off UBSan's signed
#                                     overflow check; the engine must not rely on wrapping;
#   -D_GLIBCXX_ASSERTIONS             bounds-checked std::vector::operator[] (an index inside the
#                                     capacity but past size() is invisible to ASan otherwise).
# A single allocation above 2 GB is reported as an error (max_allocation_size_mb): test inputs are small,
# so one that big is an allocation sized by an unchecked value.
# Environment: PYTHON (default .venv/bin/python), KAFKAGROUP_BUILD_JOBS (default 2),
#              SANITIZE_CASES (default 20000), SANITIZE_EXTRA_FLAGS (more flags for the wrappers; objects
#              are rebuilt only when their source changes, so `rm -rf build/asan` after changing flags).
# Cost on the 2-core reference machine: build ~1 min from scratch, tests ~1.5 min, garbage ~2.5 min.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OUT="$ROOT/build/asan"
SRC="$OUT/src"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
SAN_FLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g -O1 -fno-wrapv -D_GLIBCXX_ASSERTIONS ${SANITIZE_EXTRA_FLAGS:-}"
DEFAULT_TESTS=(tests/core tests/sticky tests/protocol tests/spark/test_spark_builder.py)

build() {
    mkdir -p "$OUT/bin" "$SRC"
    cat >"$OUT/bin/cc" <<EOF
#!/bin/sh
exec gcc "\$@" $SAN_FLAGS
EOF
    cat >"$OUT/bin/c++" <<EOF
#!/bin/sh
exec g++ "\$@" $SAN_FLAGS
EOF
    chmod +x "$OUT/bin/cc" "$OUT/bin/c++"
    # The shared references sit beside the repo; tests reach them as <root>/../shared.
    ln -sfn "$(cd "$ROOT/.." && pwd)/shared" "$OUT/shared"

    # Copy the work tree as it is now (uncommitted edits included), without build outputs. tar keeps
    # mtimes, so the incremental build recompiles only sources that changed since the last copy.
    # Files gone from the work tree are removed from the copy too (setup.py globs csrc/ and pyext/);
    # build outputs (build/, *.so, the generated pyext/*.c) stay for the incremental build.
    (cd "$ROOT" && git ls-files -z --cached --others --exclude-standard) | sort -z >"$OUT/files"
    (cd "$SRC" && find . -path ./build -prune -o -type f ! -name '*.so' ! -path './pyext/*.c' \
        ! -path '*/__pycache__/*' -printf '%P\0') | sort -z | comm -z -23 - "$OUT/files" |
        (cd "$SRC" && xargs -0 -r rm -f --)
    (cd "$ROOT" && tar --null --ignore-failed-read -T "$OUT/files" -cf -) | tar -xf - -C "$SRC"
    # A header change must rebuild everything (setup.py compares each object with its source only).
    local newest_header
    newest_header="$(find "$SRC/csrc" -name '*.hpp' -newer "$OUT/.built" 2>/dev/null | head -1 || true)"
    if [[ ! -e "$OUT/.built" || -n "$newest_header" ]]; then rm -rf "$SRC/build"; fi

    (cd "$SRC" && env CC="$OUT/bin/cc" CXX="$OUT/bin/c++" LDSHARED="$OUT/bin/cc -shared" KAFKAGROUP_SHARED_LIBSTDCXX=1 \
        LDCXXSHARED="$OUT/bin/c++ -shared" KAFKAGROUP_BUILD_JOBS="${KAFKAGROUP_BUILD_JOBS:-2}" \
        "$PYTHON" setup.py -q build_ext --inplace)
    local so
    for so in "$SRC"/kafkagroup/*.so; do
        grep -q __asan_init <(nm -D "$so") || { echo "sanitize.sh: $so is not instrumented" >&2; exit 1; }
    done
    touch "$OUT/.built"
}

# The interpreter is not instrumented: libasan must be loaded first. Python leaks by design, so leak
# detection is off; any ASan or UBSan report aborts the process (the test run fails).
run_env() {
    (cd "$SRC" && env PYTHONPATH="$SRC" PYTHONMALLOC=malloc \
        LD_PRELOAD="$(g++ -print-file-name=libasan.so):$(g++ -print-file-name=libubsan.so)" \
        ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:strict_init_order=1:detect_stack_use_after_return=1:max_allocation_size_mb=2048" \
        UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
        "$@")
}

check_imports() {
    run_env "$PYTHON" -c "
import kafkagroup._core as c, kafkagroup._codec as k, pathlib
src = pathlib.Path('$SRC').resolve()
for mod in (c, k):
    assert pathlib.Path(mod.__file__).resolve().is_relative_to(src), f'{mod.__name__} loaded from {mod.__file__}'
print('sanitized modules:', c.__file__, k.__file__)"
}

run_tests() {
    check_imports
    if [[ $# -eq 0 ]]; then set -- "${DEFAULT_TESTS[@]}"; fi
    run_env "$PYTHON" -m pytest -q -p no:cacheprovider -m "not spark" "$@"
}

# Both drivers keep the case being run in a file: after an abort, replay it with --replay.
run_garbage() {
    check_imports
    local cases="${SANITIZE_CASES:-20000}"
    run_env "$PYTHON" tools/engine_garbage.py --cases "$cases" --progress "$OUT/engine_garbage.case" ||
        { echo "sanitize.sh: engine_garbage stopped at: $(cat "$OUT/engine_garbage.case")" >&2; return 1; }
    run_env "$PYTHON" tools/codec_garbage.py --cases "$((2 * cases))" --progress "$OUT/codec_garbage.case" ||
        { echo "sanitize.sh: codec_garbage stopped at: $(cat "$OUT/codec_garbage.case")" >&2; return 1; }
}

# The C++ tests were never run sanitized before: memcmp(null, null, 0) in prepare() went unseen (UBSan).
run_cxx() {
    local objects
    objects="$(find "$SRC"/build/temp.*/csrc/kafkagroup -name '*.o' | sort)"
    # shellcheck disable=SC2086  # (the flags and the object list are word lists)
    (cd "$SRC" && g++ -std=c++17 -Icsrc $SAN_FLAGS csrc/tests/*.cpp $objects -o "$OUT/engine_test")
    ASAN_OPTIONS="detect_leaks=0:abort_on_error=1" UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" "$OUT/engine_test"
}

case "${1:-all}" in
    build) build ;;
    test) shift; run_tests "$@" ;;
    cxx) run_cxx ;;
    garbage) run_garbage ;;
    run) shift; [[ "${1:-}" == python ]] && set -- "$PYTHON" "${@:2}"; check_imports; run_env "$@" ;;
    all) build; run_cxx; run_tests; run_garbage ;;
    *) echo "usage: $0 [all|build|cxx|test [PYTEST ARGS]|garbage|run CMD...]" >&2; exit 2 ;;
esac
