// Reference encoder for the tokenizer agreement test and benchmark: the npm `tiktoken` package.
//   node tiktoken_reference.cjs ranks <encoding> <out.model>
//       writes the encoding's ranks in the tiktoken.model line format ("<base64> <rank>")
//   node tiktoken_reference.cjs encode <encoding> <pattern file|-> <specials.json> <corpus.json> <out.json>
//       corpus.json: [{"b64": <utf-8 bytes, base64>, "special": bool}]; the bytes are decoded as
//       a WHATWG decoder does (ill-formed UTF-8 -> U+FFFD); "special": true allows every special
//       token, false encodes them as plain text. Writes [[ids...], ...].
//       "-" keeps the encoding's own pattern; specials.json {} keeps its own specials.
//   node tiktoken_reference.cjs bench <encoding> <pattern file|-> <text file> <repeats>
//       prints {"bytes": n, "seconds": s, "tokens": n} for the best of <repeats> encodes.
"use strict";
const fs = require("fs");
const { Tiktoken } = require("tiktoken");

// <name> is an encoding shipped with the package, or a tiktoken.model file (ranks 0..n-1).
function load(name) {
  if (!name.endsWith(".model")) return require(`tiktoken/encoders/${name}.json`);
  const lines = fs.readFileSync(name, "utf8").split("\n").filter(Boolean);
  const tokens = [];
  for (const l of lines) {
    const [b64, rank] = l.split(" ");
    tokens[Number(rank)] = b64;
  }
  return { bpe_ranks: "! 0 " + tokens.join(" "), special_tokens: {}, pat_str: "" };
}

function makeEncoder(name, pattern, specials) {
  const e = load(name);
  const sp = specials && Object.keys(specials).length ? specials : e.special_tokens;
  const pat = pattern && pattern !== "-" ? fs.readFileSync(pattern, "utf8") : e.pat_str;
  return new Tiktoken(e.bpe_ranks, sp, pat);
}

const [cmd, ...args] = process.argv.slice(2);
if (cmd === "ranks") {
  const [name, out] = args;
  const lines = [];
  for (const group of load(name).bpe_ranks.split("\n").filter(Boolean)) {
    const [, first, ...tokens] = group.split(" ");
    tokens.forEach((t, i) => lines.push(`${t} ${Number(first) + i}`));
  }
  fs.writeFileSync(out, lines.join("\n") + "\n");
} else if (cmd === "encode") {
  const [name, pattern, specialsFile, corpusFile, out] = args;
  const enc = makeEncoder(name, pattern, JSON.parse(fs.readFileSync(specialsFile, "utf8")));
  const corpus = JSON.parse(fs.readFileSync(corpusFile, "utf8"));
  const ids = corpus.map((c) => {
    const text = Buffer.from(c.b64, "base64").toString("utf8");
    return Array.from(c.special ? enc.encode(text, "all") : enc.encode(text, [], []));
  });
  fs.writeFileSync(out, JSON.stringify(ids));
  enc.free();
} else if (cmd === "bench") {
  const [name, pattern, file, repeats] = args;
  const enc = makeEncoder(name, pattern, {});
  const text = fs.readFileSync(file, "utf8");
  let best = Infinity, n = 0;
  for (let r = 0; r < Number(repeats || 3); ++r) {
    const t0 = process.hrtime.bigint();
    n = enc.encode(text, [], []).length;
    best = Math.min(best, Number(process.hrtime.bigint() - t0) / 1e9);
  }
  console.log(JSON.stringify({ bytes: Buffer.byteLength(text, "utf8"), seconds: best, tokens: n }));
  enc.free();
} else {
  console.error("usage: tiktoken_reference.cjs ranks|encode|bench ...");
  process.exit(2);
}
