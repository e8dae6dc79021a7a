/**
 * @module The KV file on disk holds token hashes, the request log and usage, so only its owner may read it: a new
 * file is created 0600 before KV opens it (SQLite gives its -wal and -shm companions the same mode), and an existing
 * one is tightened to 0600 at start, with a log line.
 */

/** The file and the companions SQLite keeps beside it while it is open. */
function kvFiles(path: string): string[] {
  return [path, `${path}-wal`, `${path}-shm`];
}

/** Creates the KV file at `path` readable by its owner only, or tightens the mode of the one there (and companions). */
export async function keepKvFilePrivate(path: string, log: (line: Record<string, unknown>) => void): Promise<void> {
  // Windows has no such modes; its ACLs follow the folder.
  if (Deno.build.os === "windows") return;
  try {
    (await Deno.open(path, { createNew: true, write: true, mode: 0o600 })).close();
    return;
  } catch (err) {
    if (!(err instanceof Deno.errors.AlreadyExists)) throw err;
  }
  for (const file of kvFiles(path)) {
    let mode: number | null;
    try {
      mode = (await Deno.stat(file)).mode;
    } catch (err) {
      if (err instanceof Deno.errors.NotFound) continue;
      throw err;
    }
    if (mode === null || (mode & 0o077) === 0) continue;
    await Deno.chmod(file, mode & 0o700);
    log({
      level: "warn",
      event: "kv_file_mode_tightened",
      file,
      from: (mode & 0o777).toString(8).padStart(4, "0"),
      to: (mode & 0o700).toString(8).padStart(4, "0"),
    });
  }
}
