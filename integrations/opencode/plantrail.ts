// plantrail for OpenCode: `plantrail install opencode` writes this file, `uninstall opencode` removes it.
// On every todo.updated event (the agent's whole todo list) it writes the event, with the project's directory, as
// one JSON line to `plantrail hook opencode`. See docs/live-agents.md.
// Written in the JavaScript subset of TypeScript (the type is a JSDoc comment), so the very file runs under
// Node in plantrail's tests (tests/capture/test_opencode_plugin.py) as it does under OpenCode's Bun.

// The plantrail this plugin runs: the absolute command install wrote, or a bare `plantrail` found on PATH.
// Bun's shell passes each element of an interpolated list as one argument, quoted.
const PLANTRAIL = ["plantrail"]

/** @type {import("@opencode-ai/plugin").Plugin} */
export const Plantrail = async ({ $, directory }) => {
  return {
    event: async ({ event }) => {
      if (event.type !== "todo.updated") return
      const line = JSON.stringify({ ...event, directory }) + "\n"
      try {
        // The hook always exits 0 and prints nothing; its errors go to .plantrail/hook-errors.log.
        await $`${PLANTRAIL} hook opencode < ${new Response(line)}`.quiet().nothrow()
      } catch {
        // plantrail cannot be run: never break the session
      }
    },
  }
}
