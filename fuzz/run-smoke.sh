#!/usr/bin/env bash
# Fuzz smoke run: replays fuzz/regressions/<target>/*, then fuzzes every target for
# FUZZ_SECONDS (default 15) seconds. Exits non-zero if any target crashes, panics, times out
# or runs out of memory (libFuzzer's default -rss_limit_mb=2048 also caps single mallocs).
#
# cargo fuzz needs nightly-only rustc flags (-Zsanitizer=address, sancov passes);
# RUSTC_BOOTSTRAP=1 lets the stable toolchain accept them. It is set only for cargo fuzz, not
# for installing cargo-fuzz itself.
set -euo pipefail
cd "$(dirname "$0")"

seconds="${FUZZ_SECONDS:-15}"

if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "== installing cargo-fuzz"
  cargo install --locked cargo-fuzz
fi

fuzz() { RUSTC_BOOTSTRAP=1 cargo fuzz "$@"; }

echo "== building fuzz targets (fuzz/target)"
fuzz build -a

logs=target/smoke-logs
mkdir -p "$logs"
failed=()
for target in $(fuzz list); do
  regressions=()
  if [ -d "regressions/$target" ]; then
    while IFS= read -r -d '' f; do regressions+=("$f"); done \
      < <(find "regressions/$target" -type f -print0 | sort -z)
  fi
  if [ ${#regressions[@]} -gt 0 ]; then
    echo "== $target: replaying ${#regressions[@]} regression input(s)"
    if ! fuzz run -a "$target" "${regressions[@]}" -- -timeout=10 >"$logs/$target.regressions.log" 2>&1; then
      tail -n 40 "$logs/$target.regressions.log"
      failed+=("$target (regressions)")
      continue
    fi
  fi

  echo "== $target: fuzzing for ${seconds}s"
  args=(-max_total_time="$seconds" -timeout=10 -print_final_stats=1)
  if [ -f "$target.dict" ]; then args+=(-dict="$target.dict"); fi
  if fuzz run -a "$target" -- "${args[@]}" >"$logs/$target.log" 2>&1; then
    grep -E '^#[0-9]+[[:space:]]+DONE' "$logs/$target.log" | tail -n 1 || true
  else
    tail -n 60 "$logs/$target.log"
    echo "!! $target failed; the crashing input is in fuzz/artifacts/$target/"
    failed+=("$target")
  fi
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "== fuzz smoke FAILED: ${failed[*]} (logs in fuzz/$logs)"
  exit 1
fi
echo "== fuzz smoke passed (logs in fuzz/$logs)"
