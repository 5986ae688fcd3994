// The official npm `openai` client against a running `deltaserve serve` on the tiny golden
// checkpoint. Usage: node openai_client_test.cjs <base url> <cold.json>
//   cold.json: {"prompt_a": [ids], "prompt_b": [ids], "cold_b": [ids], "max_tokens": n} where
//   prompt_b shares a page-aligned prefix with prompt_a and cold_b is the greedy continuation of
//   prompt_b computed without any cache (deltaserve generate).
// Prints "openai client: N passed, N failed" and exits non-zero on any failure.
"use strict";
const fs = require("fs");
const { OpenAI } = require("openai");

const [baseUrl, coldFile] = process.argv.slice(2);
const cold = JSON.parse(fs.readFileSync(coldFile, "utf8"));
const client = new OpenAI({ baseURL: baseUrl + "/v1", apiKey: "none", maxRetries: 0, timeout: 120000 });

let passed = 0, failed = 0;
async function check(name, fn) {
  try {
    await fn();
    ++passed;
    console.log(`ok   ${name}`);
  } catch (e) {
    ++failed;
    console.log(`FAIL ${name}: ${e && e.stack ? e.stack : e}`);
  }
}
function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

(async () => {
  let model = "";
  await check("models.list", async () => {
    const page = await client.models.list();
    assert(page.data.length === 1, "one model");
    model = page.data[0].id;
    assert(model.length > 0, "model id");
  });

  await check("chat completion (non-stream)", async () => {
    const r = await client.chat.completions.create({
      model, messages: [{ role: "user", content: "Hello! What is the cache?" }], max_tokens: 8, temperature: 0,
    });
    assert(r.object === "chat.completion", "object");
    assert(r.choices[0].message.role === "assistant", "role");
    assert(typeof r.choices[0].message.content === "string", "content");
    assert(["length", "stop"].includes(r.choices[0].finish_reason), "finish_reason " + r.choices[0].finish_reason);
    assert(r.usage.prompt_tokens > 10 && r.usage.completion_tokens >= 1, "usage " + JSON.stringify(r.usage));
  });

  await check("chat completion (stream, include_usage)", async () => {
    const stream = await client.chat.completions.create({
      model, messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "Hi" }],
      max_tokens: 6, temperature: 0, stream: true, stream_options: { include_usage: true },
    });
    let n = 0, text = "", usage = null, finish = null, role = null;
    for await (const chunk of stream) {
      ++n;
      if (chunk.usage) usage = chunk.usage;
      if (chunk.choices.length) {
        const c = chunk.choices[0];
        if (c.delta.role) role = c.delta.role;
        text += c.delta.content || "";
        if (c.finish_reason) finish = c.finish_reason;
      }
    }
    assert(n >= 2, "chunks " + n);
    assert(role === "assistant", "role");
    assert(finish === "length" || finish === "stop", "finish " + finish);
    assert(usage && usage.completion_tokens >= 1 && usage.completion_tokens <= 6, "usage " + JSON.stringify(usage));
  });

  await check("completion with a token-id prompt", async () => {
    const r = await client.completions.create({
      model, prompt: cold.prompt_a, max_tokens: cold.max_tokens, temperature: 0, return_token_ids: true, ignore_eos: true,
    });
    assert(r.object === "text_completion", "object");
    assert(r.choices[0].token_ids.length === cold.max_tokens, "token_ids " + JSON.stringify(r.choices[0]));
    assert(r.usage.prompt_tokens === cold.prompt_a.length, "prompt_tokens");
  });

  await check("shared prefix: cached_tokens > 0 and the cold greedy tokens", async () => {
    const stream = await client.completions.create({
      model, prompt: cold.prompt_b, max_tokens: cold.max_tokens, temperature: 0, return_token_ids: true, ignore_eos: true,
      stream: true, stream_options: { include_usage: true },
    });
    let ids = [], usage = null;
    for await (const chunk of stream) {
      if (chunk.usage) usage = chunk.usage;
      if (chunk.choices.length && chunk.choices[0].token_ids) ids = ids.concat(chunk.choices[0].token_ids);
    }
    assert(usage && usage.prompt_tokens_details && usage.prompt_tokens_details.cached_tokens > 0,
           "cached_tokens " + JSON.stringify(usage));
    assert(same(ids, cold.cold_b), `tokens ${JSON.stringify(ids)} != cold ${JSON.stringify(cold.cold_b)}`);
  });

  await check("logprobs (completions and chat)", async () => {
    const r = await client.completions.create({
      model, prompt: cold.prompt_a, max_tokens: 4, temperature: 0, logprobs: 3, ignore_eos: true,
    });
    const lp = r.choices[0].logprobs;
    assert(lp && lp.token_logprobs.length === 4 && lp.tokens.length === 4, "logprobs " + JSON.stringify(lp));
    assert(lp.token_logprobs.every((x) => x <= 0), "log-probabilities are <= 0");
    assert(lp.top_logprobs.every((t) => Object.keys(t).length >= 1 && Object.keys(t).length <= 3), "top 3");
    // Greedy: the sampled token is the most likely one.
    assert(lp.top_logprobs.every((t, i) => Math.abs(Math.max(...Object.values(t)) - lp.token_logprobs[i]) < 1e-5),
           "greedy token has the top log-probability");
    const c = await client.chat.completions.create({
      model, messages: [{ role: "user", content: "Hi" }], max_tokens: 3, temperature: 0, logprobs: true,
      top_logprobs: 2,
    });
    const content = c.choices[0].logprobs.content;
    assert(content.length === c.usage.completion_tokens, "one entry per token");
    assert(content.every((e) => e.top_logprobs.length === 2 && Array.isArray(e.bytes)), "chat top_logprobs");
  });

  await check("errors: unknown model 404, bad request 400", async () => {
    let status = 0;
    try {
      await client.completions.create({ model: "no-such-model", prompt: [1, 2], max_tokens: 1 });
    } catch (e) {
      status = e.status;
    }
    assert(status === 404, "unknown model -> " + status);
    try {
      await client.completions.create({ model, prompt: [1, 2], max_tokens: -3 });
      status = 0;
    } catch (e) {
      status = e.status;
    }
    assert(status === 400, "bad max_tokens -> " + status);
  });

  console.log(`openai client: ${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
})();
