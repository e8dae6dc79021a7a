const mb = (n: number) => (n / 1048576).toFixed(1);
const show = (label: string) => {
  const m = Deno.memoryUsage();
  const rss = /VmRSS:\s+(\d+)/.exec(Deno.readTextFileSync("/proc/self/status"))![1];
  console.error(label.padEnd(30), "rss", (Number(rss) / 1024).toFixed(1), "heapTotal", mb(m.heapTotal), "heapUsed", mb(m.heapUsed));
};
show("empty");
for (const spec of Deno.args) {
  await import(spec);
  show(spec);
}
