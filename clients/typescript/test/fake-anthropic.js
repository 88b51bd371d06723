// A stand-in for Anthropic's Messages API on loopback, so the Claude Agent SDK (and the Claude Code it
// runs) works offline: the model asks to run one Bash command, then says what the tool answered.
import http from "node:http";

export async function fakeAnthropic(command) {
  const requests = [];
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      if (!req.url.startsWith("/v1/messages")) return res.writeHead(404).end("{}");
      const asked = JSON.parse(body || "{}");
      requests.push(asked);
      const last = asked.messages?.at(-1);
      const result = Array.isArray(last?.content) ? last.content.find((c) => c.type === "tool_result") : undefined;
      const withBash = (asked.tools ?? []).some((t) => t.name === "Bash");
      const said = result ? `The tool said: ${JSON.stringify(result.content)}` : "ok";
      const content = withBash && !result ? [{ type: "tool_use", id: "toolu_01", name: "Bash", input: { command, description: "Clear the cache" } }] : [{ type: "text", text: said }];
      const stop = content[0].type === "tool_use" ? "tool_use" : "end_turn";
      const message = { id: `msg_${requests.length}`, type: "message", role: "assistant", model: asked.model, content, stop_reason: stop, stop_sequence: null, usage: { input_tokens: 1, output_tokens: 1 } };
      if (!asked.stream) return res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(message));
      res.writeHead(200, { "content-type": "text/event-stream" });
      const send = (type, data) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
      send("message_start", { message: { ...message, content: [], stop_reason: null } });
      content.forEach((block, index) => {
        const text = block.type === "text";
        send("content_block_start", { index, content_block: text ? { type: "text", text: "" } : { ...block, input: {} } });
        send("content_block_delta", { index, delta: text ? { type: "text_delta", text: block.text } : { type: "input_json_delta", partial_json: JSON.stringify(block.input) } });
        send("content_block_stop", { index });
      });
      send("message_delta", { delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 1 } });
      send("message_stop", {});
      res.end();
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${server.address().port}`, requests, close: () => server.close() };
}
