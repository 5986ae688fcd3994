#!/usr/bin/env bash
# Tokenizer encoding speed: deltaserve's BPE vs the npm tiktoken encoder (Rust core in wasm) on the
# same ranks (o200k_base converted to tiktoken.model), the same pattern (Kimi's, and o200k's own)
# and the same texts. Prints one JSON line per run. Needs a build (build/apps/deltaserve) and
# tests/node/node_modules (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
ds=${DS_BIN:-build/apps/deltaserve}
node_ref=tests/node/tiktoken_reference.cjs
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
node "$node_ref" ranks o200k_base "$tmp/o200k.model"
# Text 1: this repository's sources and docs (English prose + C++ code), about 1-2 MB.
git ls-files 'src/*.cpp' 'src/*.h' 'docs/*.md' 'apps/*.cpp' README.md | xargs cat >"$tmp/code.txt"
# Text 2: multilingual prose (Latin, CJK, Cyrillic, Arabic, emoji), repeated to ~1 MB.
node -e '
const parts = ["The quick brown fox jumps over the lazy dog. ", "你好世界，今天天气很好。", "日本語のテキストです。",
  "Привет, мир! ", "مرحبا بالعالم ", "👋🏽 👨‍👩‍👧‍👦 ", "I\x27m sure they\x27ll say it\x27s 12345 fine.\n"];
let s = ""; let i = 0; while (Buffer.byteLength(s) < 1000000) { s += parts[i % parts.length]; i += 7; i %= 1000003; }
require("fs").writeFileSync(process.argv[1], s);' "$tmp/multi.txt"
"$ds" bench tokenizer --tokenizer "$tmp/o200k.model" --pattern kimi --print-pattern >"$tmp/kimi.pat"
for text in code multi; do
  for pat in kimi o200k; do
    ours=$("$ds" bench tokenizer --tokenizer "$tmp/o200k.model" --pattern "$pat" --text "$tmp/$text.txt" --repeats 5)
    patfile=-
    [ "$pat" = kimi ] && patfile="$tmp/kimi.pat"
    theirs=$(node "$node_ref" bench o200k_base "$patfile" "$tmp/$text.txt" 5)
    echo "{\"text\": \"$text\", \"pattern\": \"$pat\", \"deltaserve\": $ours, \"npm_tiktoken\": $theirs}"
  done
done
