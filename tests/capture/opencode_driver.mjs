// Runs the OpenCode plugin file under Node with a fake Bun shell `$`: each command the plugin runs is executed
// for real, split into arguments as Bun's shell splits a template (the literal text on whitespace; an
// interpolated string is one argument, an interpolated array one argument per element; a Response after `<` is
// stdin). A bare `plantrail` is replaced by the argv in $PLANTRAIL_ARGV (a JSON list) when that is set; any
// other program, an absolute path, runs as it is, with this process's PATH. A `$` that throws stands for a
// missing plantrail. Usage:
//   node opencode_driver.mjs PLUGIN.mjs DIRECTORY EVENTS.jsonl [throw]
// Prints one JSON line: the commands run (their text, argv, stdin, exit code and stdout) and whether every event
// handler resolved.
import { spawnSync } from "node:child_process"
import { readFileSync } from "node:fs"
import { pathToFileURL } from "node:url"

const [plugin, directory, events, mode] = process.argv.slice(2)
const runs = []

// The argv and stdin Bun's shell makes of a template with no quotes, pipes or globs (all the plugin uses).
function words(strings, values) {
  const argv = []
  let stdin = null
  let redirect = false
  strings.forEach((part, i) => {
    const afterValue = i > 0 && part !== "" && !/^\s/.test(part)
    const beforeValue = i < values.length && part !== "" && !/\s$/.test(part)
    if (afterValue || beforeValue) {
      throw new Error(`the driver cannot split a value glued to text: ${JSON.stringify(part)}`)
    }
    for (const word of part.split(/\s+/).filter(Boolean)) {
      if (word === "<") redirect = true
      else argv.push(word)
    }
    if (i >= values.length) return
    const value = values[i]
    if (redirect) {
      if (!(value instanceof Response)) throw new Error("the driver redirects only a Response")
      stdin = value
      redirect = false
    } else if (Array.isArray(value)) argv.push(...value.map(String))
    else argv.push(String(value))
  })
  return { argv, stdin }
}

function $(strings, ...values) {
  const promise = (async () => {
    if (mode === "throw") throw new Error("plantrail: command not found")
    const text = strings.reduce((all, part, i) => all + part + (i < values.length ? "${" + i + "}" : ""), "")
    const { argv: given, stdin } = words(strings, values)
    const input = stdin === null ? "" : await stdin.text()
    const onPath = given[0] === "plantrail" && process.env.PLANTRAIL_ARGV !== undefined
    const argv = onPath ? [...JSON.parse(process.env.PLANTRAIL_ARGV), ...given.slice(1)] : given
    const done = spawnSync(argv[0], argv.slice(1), { input, cwd: directory })
    runs.push({ text, argv: given, stdin: input, exit: done.status, stdout: String(done.stdout) })
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
