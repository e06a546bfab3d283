// plantrail for OpenCode: forward todo.updated events to `plantrail hook opencode` (one JSON line each).
// Copy this file to .opencode/plugins/ (or ~/.config/opencode/plugins/). See docs/live-agents.md.
// Written in the JavaScript subset of TypeScript (the type is a JSDoc comment), so the very file runs under
// Node in plantrail's tests (tests/capture/test_opencode_plugin.py) as it does under OpenCode's Bun.

/** @type {import("@opencode-ai/plugin").Plugin} */
export const Plantrail = async ({ $, directory }) => {
  return {
    event: async ({ event }) => {
      if (event.type !== "todo.updated") return
      const line = JSON.stringify({ ...event, directory }) + "\n"
      try {
        // The hook always exits 0 and prints nothing; its errors go to .plantrail/hook-errors.log.
        await $`plantrail hook opencode < ${new Response(line)}`.quiet().nothrow()
      } catch {
        // plantrail not on PATH: never break the session
      }
    },
  }
}
