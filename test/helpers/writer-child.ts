// Another process of this host as a writer of partial files (src/queue/holder.ts's thisWriterTag), for the partial
// sweeps' tests: one that has exited (a dead writer) or one that runs until its caller kills it.
import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";
import { pathToFileURL } from "node:url";

export async function writerOfChild(keep: "exited" | "running"): Promise<{ tag: string; pid: number; child: ChildProcess }> {
  const holder = JSON.stringify(pathToFileURL(path.resolve("src/queue/holder.ts")).href);
  const stay = keep === "running" ? "process.stdin.resume();" : "";
  const child = spawn(process.execPath, ["--import", "tsx", "-e", `import(${holder}).then((m) => { console.log(m.thisWriterTag()); ${stay} })`], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  let out = "";
  const tag = await new Promise<string>((resolve, reject) => {
    child.stdout.on("data", (c: Buffer) => {
      out += c.toString();
      if (out.includes("\n")) resolve(out.trim());
    });
    void exited.then(() => reject(new Error(`the child named no writer: ${out}`)));
  });
  if (keep === "exited") {
    child.stdin.end();
    await exited;
  }
  return { tag, pid: child.pid ?? 0, child };
}
