// What every scenario shares: the providers pointed at the gateway, the tool they offer,
// and how a scenario prints its result (one JSON line on stdout; a failure's message and
// stack on stderr, exit 1).
import { createAnthropic } from '@ai-sdk/anthropic';
import { createGoogleGenerativeAI } from '@ai-sdk/google';
import { createOpenAI } from '@ai-sdk/openai';
import { tool } from 'ai';
import { z } from 'zod';

// The SDK's warnings (a model id it does not know as a reasoning model) would crowd the
// test's output.
globalThis.AI_SDK_LOG_WARNINGS = false;

// The gateway in these tests has no client keys; the SDKs insist on one all the same.
export const KEY = 'sk-js-clients-test';

/** `node <script> <gateway URL> <model> [<provider>]` */
export function args() {
  const [url, model, provider] = process.argv.slice(2);
  if (!url || !model) {
    throw new Error(`usage: node ${process.argv[1]} <gateway URL> <model> [openai|anthropic|google]`);
  }
  return { url: url.replace(/\/$/, ''), model, provider };
}

/** The AI SDK model `model` of `provider` (`openai`: Responses, the default), at the gateway. */
export function languageModel(provider, url, model) {
  switch (provider) {
    case 'openai':
      return createOpenAI({ baseURL: `${url}/v1`, apiKey: KEY }).responses(model);
    case 'anthropic':
      return createAnthropic({ baseURL: `${url}/v1`, apiKey: KEY })(model);
    case 'google':
      return createGoogleGenerativeAI({ baseURL: `${url}/v1beta`, apiKey: KEY })(model);
    default:
      throw new Error(`unknown provider ${provider}: openai, anthropic or google`);
  }
}

/** Each provider's way of asking for thinking, with its summaries or thoughts returned. */
export function thinkingOptions(provider) {
  switch (provider) {
    case 'openai':
      return { openai: { reasoningEffort: 'low', reasoningSummary: 'auto' } };
    case 'anthropic':
      return { anthropic: { thinking: { type: 'enabled', budgetTokens: 1024 } } };
    case 'google':
      return { google: { thinkingConfig: { includeThoughts: true, thinkingBudget: 1024 } } };
    default:
      throw new Error(`unknown provider ${provider}`);
  }
}

/** The tool the mock's `tools` model calls: `{"city": "Paris"}` from its schema. */
export const calls = [];
export const getWeather = tool({
  description: 'The weather in a city.',
  inputSchema: z.object({ city: z.string() }),
  execute: async ({ city }) => {
    calls.push({ city });
    return `sunny in ${city}`;
  },
});

/** Runs `scenario`, printing its result as JSON, or the error and exit status 1. */
export async function run(scenario) {
  try {
    const result = await scenario();
    process.stdout.write(`${JSON.stringify(result)}\n`);
  } catch (e) {
    process.stderr.write(`${e?.stack ?? e}\n`);
    if (e?.responseBody) process.stderr.write(`response body: ${e.responseBody}\n`);
    if (e?.url) process.stderr.write(`url: ${e.url}\n`);
    process.exit(1);
  }
}
