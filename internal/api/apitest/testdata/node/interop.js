// Drives healthchecks-io-client 1.0.4 against Vigil and prints what it saw
// as one JSON object; the Go test asserts on it. Environment: VIGIL_URL,
// VIGIL_API_KEY.
const { HealthChecksApiClient, HealthChecksPingClient } = require('healthchecks-io-client');

async function main() {
  const api = new HealthChecksApiClient({ apiKey: process.env.VIGIL_API_KEY, baseUrl: process.env.VIGIL_URL, apiVersion: 3 });
  const out = {};
  const created = await api.createCheck({ name: 'node job', tags: 'prod node', timeout: 3600, grace: 60 });
  out.created = created;
  const uuid = created.ping_url.split('/').pop();
  out.list = await api.getChecks(['node']);
  out.listOther = await api.getChecks(['nope']);
  out.get = await api.getCheck(uuid);
  out.updated = await api.updateCheck(uuid, { desc: 'updated by node', schedule: '*/5 * * * *', tz: 'UTC' });

  const ping = new HealthChecksPingClient({ uuid, baseUrl: process.env.VIGIL_URL + '/ping' });
  await ping.start();
  await ping.success('all good');
  await ping.fail('it broke');
  out.pings = await api.listPings(uuid);
  out.flips = await api.listFlips(uuid);
  out.flipsSince = await api.listFlips(uuid, { seconds: 3600 });
  out.channels = await api.getIntegrations();
  out.paused = await api.pauseCheck(uuid);
  out.deleted = await api.deleteCheck(uuid);
  try {
    await api.getCheck(uuid);
    out.afterDelete = 'found';
  } catch (err) {
    out.afterDelete = err.statusCode || err.message;
  }
  process.stdout.write(JSON.stringify(out));
}

main().catch((err) => {
  console.error(err.stack || err);
  process.exit(1);
});
