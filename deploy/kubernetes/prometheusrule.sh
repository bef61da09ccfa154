#!/bin/sh
# Prints the rules of deploy/prometheus (every *.rules.yml: recording, alerts, connections,
# fleet) as one PrometheusRule for the Prometheus Operator:
#   deploy/kubernetes/prometheusrule.sh | kubectl apply -f -
# (kube-prometheus-stack selects rules by label; add yours with NVMEOF_RULE_LABELS, e.g.
#  NVMEOF_RULE_LABELS='release: kube-prometheus-stack').
set -eu
dir=$(dirname "$0")/../prometheus
printf 'apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nmetadata:\n'
printf '  name: nvmeof\n  namespace: nvmeof-exporter\n  labels: {%s}\nspec:\n  groups:\n' "${NVMEOF_RULE_LABELS:-}"
for f in "$dir"/*.rules.yml; do
  sed -n '/^groups:/,$p' "$f" | tail -n +2 | sed 's/^\(.\)/  \1/'
done
