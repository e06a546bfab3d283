// Runs the OpenCode plugin file under Node with a fake Bun shell `$`: each command the plugin runs is executed
// for real (`plantrail` replaced by the argv in $PLANTRAIL_ARGV, a JSON list), with the Response it redirects
// as stdin; a `$` that throws stands for a missing plantrail. Usage:
//   node opencode_driver.mjs PLUGIN.mjs DIRECTORY EVENTS.jsonl [throw]
// Prints one JSON line: the commands run (their text and stdin) and whether every event handler resolved.
import { spawnSync } from "node:child_process"
import { readFileSync } from "node:fs"
import { pathToFileURL } from "node:url"

const [plugin, directory, events, mode] = process.argv.slice(2)
const runs = []

function $(strings, ...values) {
  const promise = (async () => {
    if (mode === "throw") throw new Error("plantrail: command not found")
    const text = strings.reduce((all, part, i) => all + part + (i < values.length ? "${" + i + "}" : ""), "")
    const redirect = /^(?<command>.*?)\s*<\s*\$\{0\}\s*$/.exec(text)
    const stdin = values[0] instanceof Response ? await values[0].text() : ""
    const [program, ...args] = (redirect ? redirect.groups.command : text).trim().split(/\s+/)
    const argv = program === "plantrail" ? [...JSON.parse(process.env.PLANTRAIL_ARGV), ...args] : [program, ...args]
    const done = spawnSync(argv[0], argv.slice(1), { input: stdin, cwd: directory })
    runs.push({ text, stdin, exit: done.status, stdout: String(done.stdout) })
    return { exitCode: done.status }
  })()
  promise.quiet = () => promise
  promise.nothrow = () => promise
  return promise
}

const { Plantrail } = await import(pathToFileURL(plugin).href)
const hooks = await Plantrail({ $, directory, client: {}, project: {}, worktree: directory })
let resolved = true
for (const line of readFileSync(events, "utf8").split("\n")) {
  if (!line.trim()) continue
  try {
    await hooks.event({ event: JSON.parse(line) })
  } catch {
    resolved = false
  }
}
process.stdout.write(JSON.stringify({ runs, resolved }) + "\n")
