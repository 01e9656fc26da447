// A two-turn tool conversation through an AI SDK provider, with thinking: the model calls
// `get_weather`, the SDK runs it and sends its result back, the model answers.
// `node tools.mjs <url> <model> <provider> [--stream] [--no-store]`: generateText, or
// streamText; `--no-store` (OpenAI) keeps nothing on the server and sends the reasoning
// back whole, with its `encrypted_content`, instead of an `item_reference`.
import { generateText, stepCountIs, streamText } from 'ai';
import { args, calls, getWeather, languageModel, run, thinkingOptions } from './lib.mjs';

const { url, model, provider } = args();
const stream = process.argv.includes('--stream');
const noStore = process.argv.includes('--no-store');

run(async () => {
  const options = {
    model: languageModel(provider, url, model),
    prompt: 'What is the weather in Paris?',
    tools: { get_weather: getWeather },
    stopWhen: stepCountIs(4),
    maxRetries: 0,
    providerOptions: noStore
      ? { openai: { ...thinkingOptions(provider).openai, store: false, include: ['reasoning.encrypted_content'] } }
      : thinkingOptions(provider),
  };
  let result;
  if (stream) {
    const s = streamText({ ...options, onError: ({ error }) => { throw error; } });
    for await (const part of s.fullStream) {
      if (part.type === 'error') throw part.error;
    }
    result = { text: await s.text, steps: await s.steps };
  } else {
    result = await generateText(options);
  }
  return {
    text: result.text,
    calls,
    steps: result.steps.map((step) => ({
      finish: step.finishReason,
      reasoning: step.reasoningText ?? null,
      toolCalls: step.toolCalls.map((c) => ({ name: c.toolName, input: c.input })),
      text: step.text,
    })),
  };
});
