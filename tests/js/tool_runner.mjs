// The Anthropic TypeScript SDK's `toolRunner` with its defaults: on an `Anthropic` client
// it runs over a message thread (`thread: {"type": "create"}`, then each turn only its new
// messages with `{"type": "continue", …}`), falling back to the whole history when the
// server answers `thread_unsupported_request`. `node tool_runner.mjs <url> <model>
// [--stream]`: thinking on, one tool, until the model stops calling it.
import Anthropic from '@anthropic-ai/sdk';
import { betaTool } from '@anthropic-ai/sdk/helpers/beta/json-schema';
import { args, KEY, run } from './lib.mjs';

const { url, model } = args();
const stream = process.argv.includes('--stream');

run(async () => {
  // What the SDK sent and was answered, request by request: the `thread` it asked for, the
  // status, and the refusal's `error.details.error_code` that made it fall back.
  const exchanges = [];
  const recordingFetch = async (input, init) => {
    const response = await fetch(input, init);
    const body = typeof init?.body === 'string' ? JSON.parse(init.body) : {};
    const exchange = {
      thread: body.thread ?? null,
      messages: body.messages?.length ?? 0,
      beta: init?.headers?.get?.('anthropic-beta') ?? new Headers(init?.headers).get('anthropic-beta'),
      status: response.status,
    };
    if (response.status >= 400) {
      exchange.error = await response.clone().json().catch(() => null);
    }
    exchanges.push(exchange);
    return response;
  };
  const client = new Anthropic({
    baseURL: url,
    apiKey: KEY,
    maxRetries: 0,
    logLevel: 'off',
    fetch: recordingFetch,
  });
  const calls = [];
  const getWeather = betaTool({
    name: 'get_weather',
    description: 'The weather in a city.',
    inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    run: async ({ city }) => {
      calls.push({ city });
      return `sunny in ${city}`;
    },
  });
  const runner = client.beta.messages.toolRunner({
    model,
    max_tokens: 2048,
    thinking: { type: 'enabled', budget_tokens: 1024 },
    messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
    tools: [getWeather],
    max_iterations: 4,
    ...(stream ? { stream: true } : {}),
  });
  const turns = [];
  for await (const item of runner) {
    const message = stream ? await item.finalMessage() : item;
    turns.push({
      stop: message.stop_reason,
      blocks: message.content.map((b) => b.type),
      thinking: message.content.filter((b) => b.type === 'thinking').map((b) => b.thinking),
      toolUses: message.content
        .filter((b) => b.type === 'tool_use')
        .map((b) => ({ name: b.name, input: b.input })),
      text: message.content.filter((b) => b.type === 'text').map((b) => b.text).join(''),
    });
  }
  const history = runner.params.messages;
  return {
    text: turns.at(-1)?.text ?? null,
    calls,
    turns,
    historyRoles: history.map((m) => m.role),
    exchanges,
  };
});
