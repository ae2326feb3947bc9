// Validates Prometheus Operator objects against the operator's schemas (the package in
// package.json). Reads a JSON array of objects on stdin; writes a JSON array with, for
// each, its kind, name and the schema's error message (null when valid). Used by
// tests/deploy/test_kubernetes.py.
import { PrometheusRule } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule";
import { ServiceMonitor } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor";

const MODELS = { PrometheusRule, ServiceMonitor };

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const objects = JSON.parse(Buffer.concat(chunks).toString("utf8"));
const results = objects.map((object) => {
  const Model = MODELS[object.kind];
  let error = null;
  if (Model === undefined || object.apiVersion !== Model.apiVersion) {
    error = `no schema for ${object.apiVersion} ${object.kind}`;
  } else {
    try {
      new Model(object).validate();
    } catch (exc) {
      error = exc.message;
    }
  }
  return { kind: object.kind, name: object.metadata?.name ?? null, error };
});
process.stdout.write(JSON.stringify(results));
