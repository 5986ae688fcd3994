#!/usr/bin/env python3
"""Writes a small Kimi-style tokenizer into a test checkpoint folder (standard library only).

    python3 scripts/make_tiny_tokenizer.py tests/golden/kimi-linear-tiny tests/golden/k3-tiny

The golden checkpoints have vocab_size 512 (bos 500, eos 502) and ship no tokenizer. This gives
each folder:
  tiktoken.model         ranks 0..499: the 256 single bytes (rank = byte value) then 244 merges
                         learned by byte-level BPE from the fixed text below
  tokenizer_config.json  added_tokens_decoder 500..511 with the special tokens of the model family
                         at Kimi's offsets, bos/eos; Kimi Linear: a chat template spelling Kimi's
                         role markers; K3 (a folder whose name contains "k3"): K3's XTML markers
                         (<|end_of_msg|> <|open|> <|close|> <|sep|> at +2..+5) and no chat
                         template, as the K3 checkpoint ships none
Deterministic: the same files on every run.
"""
import base64
import collections
import json
import re
import sys

N_BASE = 500
SPECIALS = [  # id = N_BASE + index, Kimi's names; the top of the 512-token vocabulary
    "[BOS]", "[EOS]", "<|im_end|>", "<|im_user|>", "<|im_assistant|>", "<|im_system|>",
    "<|im_middle|>", "<|tool_calls_section_begin|>", "<|tool_calls_section_end|>",
    "<|tool_call_begin|>", "<|tool_call_argument_begin|>", "<|tool_call_end|>",
]
SPECIALS_K3 = {  # offset from N_BASE -> K3's name (offsets as in K3's tokenizer_config)
    0: "[BOS]", 1: "[EOS]", 2: "<|end_of_msg|>", 3: "<|open|>", 4: "<|close|>", 5: "<|sep|>",
    6: "[start_header_id]", 7: "[end_header_id]", 9: "[EOT]",
}

TEXT = """
The quick brown fox jumps over the lazy dog. A hybrid model interleaves linear attention layers
with full attention layers, and the server keeps a prefix cache of pages and state checkpoints.
When a request arrives, the scheduler looks up the longest cached prefix, restores the state, and
computes only the new tokens. Hello world! How are you today? I'm fine, thanks; we'll see what
they've done. It's a test of the tokenizer: numbers 0 1 2 3 4 5 6 7 8 9 10 100 2024 3.14.
def forward(self, tokens):
    for layer in self.layers:
        hidden = layer(hidden)
    return self.norm(hidden)
int main(int argc, char** argv) { return 0; }
{"role": "user", "content": "What is the weather in Paris?"}
You are a helpful assistant. Answer the question of the user, and keep the answer short.
The cache stores the token ids of each page, so a hash collision never gives a wrong hit.
"""

CHAT_TEMPLATE = (
    "{%- if tools -%}<|im_system|>tool_declare<|im_middle|>{{ tools | tojson }}<|im_end|>{%- endif -%}"
    "{%- for message in messages -%}"
    "{%- if loop.first and messages[0]['role'] != 'system' -%}"
    "<|im_system|>system<|im_middle|>You are a helpful assistant<|im_end|>{%- endif -%}"
    "{%- if message['role'] == 'user' -%}<|im_user|>user<|im_middle|>"
    "{%- elif message['role'] == 'assistant' -%}<|im_assistant|>assistant<|im_middle|>"
    "{%- else -%}<|im_system|>{{ message['role'] }}<|im_middle|>{%- endif -%}"
    "{{ message['content'] }}<|im_end|>{%- endfor -%}"
    "{%- if add_generation_prompt -%}<|im_assistant|>assistant<|im_middle|>{%- endif -%}"
)


def learn_merges(text, n_merges):
    words = collections.Counter(
        re.findall(r"'(?:[sdmt]|ll|ve|re)| ?[A-Za-z]+| ?[0-9]{1,3}| ?[^\sA-Za-z0-9]+[\r\n]*|\s+(?!\S)|\s+",
                   text))
    seqs = {w: [bytes([b]) for b in w.encode("utf-8")] for w in words}
    vocab = [bytes([b]) for b in range(256)]
    known = set(vocab)
    while len(vocab) < 256 + n_merges:
        pairs = collections.Counter()
        for w, n in words.items():
            s = seqs[w]
            for a, b in zip(s, s[1:]):
                pairs[(a, b)] += n
        candidates = [(n, p) for p, n in pairs.items() if p[0] + p[1] not in known]
        if not candidates:
            raise SystemExit("training text too small for the requested merges")
        # Most frequent pair; ties broken by the bytes, so the result is deterministic.
        _, (a, b) = max(candidates, key=lambda c: (c[0], [-x for x in c[1][0] + c[1][1]]))
        tok = a + b
        vocab.append(tok)
        known.add(tok)
        for w, s in seqs.items():
            out, i = [], 0
            while i < len(s):
                if i + 1 < len(s) and s[i] == a and s[i + 1] == b:
                    out.append(tok)
                    i += 2
                else:
                    out.append(s[i])
                    i += 1
            seqs[w] = out
    return vocab


def main(dirs):
    vocab = learn_merges(TEXT, N_BASE - 256)
    model = "".join(f"{base64.b64encode(t).decode()} {r}\n" for r, t in enumerate(vocab))
    def config_for(k3):
        specials = SPECIALS_K3 if k3 else dict(enumerate(SPECIALS))
        config = {
            "added_tokens_decoder": {
                str(N_BASE + i): {"content": s, "lstrip": False, "normalized": False, "rstrip": False,
                                  "single_word": False, "special": True}
                for i, s in sorted(specials.items())
            },
            "bos_token": "[BOS]",
            "eos_token": "[EOS]",
        }
        if not k3:
            config["chat_template"] = CHAT_TEMPLATE
        config["model_max_length"] = 1048576
        config["tokenizer_class"] = "TikTokenTokenizer"
        return config
    for d in dirs:
        config = config_for("k3" in d.rstrip("/").split("/")[-1].lower())
        with open(f"{d}/tiktoken.model", "w") as f:
            f.write(model)
        with open(f"{d}/tokenizer_config.json", "w") as f:
            json.dump(config, f, indent=2)
            f.write("\n")
        print(f"{d}: tiktoken.model ({len(vocab)} ranks) + tokenizer_config.json ({len(config['added_tokens_decoder'])} specials)")


if __name__ == "__main__":
    main(sys.argv[1:] or ["tests/golden/kimi-linear-tiny", "tests/golden/k3-tiny"])
