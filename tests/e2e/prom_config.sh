# Writers of Prometheus configuration files (sourced). Functions only, nothing runs when sourced:
# tests/e2e/lib.sh sources it for the e2e tests, and so does tests/bench/fleet_wal_replay.sh
# (which has no exporter binary to give lib.sh).
#
#   prom_config FILE GLOBAL [JOB TARGETS [OPTION...]]   # FILE anew, with one scrape job
#   prom_job FILE JOB TARGETS [OPTION...]                 # one more scrape job
#   prom_rules FILE GLOB...                               # rule_files
#   prom_remote_write FILE URL [OPTION...]                # remote_write, native histograms on
# Jobs come right after prom_config (they continue its scrape_configs), rule_files and
# remote_write after the last job.

# prom_config FILE GLOBAL [JOB TARGETS [OPTION...]]: writes FILE anew. GLOBAL is a duration
# (1s: scrape and evaluate every 1s), the inside of the global block's braces
# ("scrape_interval: 3s, scrape_timeout: 3s"), or "" for no global block. With JOB, a
# scrape_configs list holding that job (prom_job).
prom_config() {
  local file=$1 global=$2
  shift 2
  case $global in
    "") : >"$file" ;;
    *:*) echo "global: {$global}" >"$file" ;;
    *) echo "global: {scrape_interval: $global, evaluation_interval: $global}" >"$file" ;;
  esac
  [ $# = 0 ] && return 0
  echo "scrape_configs:" >>"$file"
  prom_job "$file" "$@"
}

# prom_job FILE JOB TARGETS [OPTION...]: appends scrape job JOB to FILE's scrape_configs.
# TARGETS: host:port (or fleet_server.py node names), comma-separated; "" for none (an OPTION
# then gives static_configs). Each OPTION is a line of YAML at the job's level, or several
# (their own nesting below the first kept): "scrape_interval: 3s", "$(prom_fleet_relabel PORT)".
prom_job() {
  local file=$1 job=$2 targets=$3 option
  shift 3
  {
    echo "  - job_name: $job"
    for option in "$@"; do
      if [ -n "$option" ]; then printf '%s\n' "$option" | sed 's/^/    /'; fi
    done
    [ -z "$targets" ] || echo "    static_configs: [{targets: [\"${targets//,/\", \"}\"]}]"
  } >>"$file"
}

# prom_rules FILE GLOB...: appends rule_files with these globs.
prom_rules() {
  local file=$1 glob list=""
  shift
  for glob in "$@"; do list="$list${list:+, }\"$glob\""; done
  echo "rule_files: [$list]" >>"$file"
}

# prom_remote_write FILE URL [OPTION...]: appends a remote_write to URL that sends native
# histograms (docs/fleet.md), with the OPTIONs (lines as for prom_job).
prom_remote_write() {
  local file=$1 url=$2 option
  shift 2
  {
    echo "remote_write:"
    echo "  - url: $url"
    echo "    send_native_histograms: true"
    for option in "$@"; do
      if [ -n "$option" ]; then printf '%s\n' "$option" | sed 's/^/    /'; fi
    done
  } >>"$file"
}

# prom_fleet_relabel PORT: the relabel_configs (a prom_job OPTION) that scrape tests/bench/
# fleet_server.py nodes: one server on 127.0.0.1:PORT, N nodes; the target (a node name) goes in
# the URL (?node=) and in instance.
prom_fleet_relabel() {
  echo "relabel_configs:"
  echo "  - {source_labels: [__address__], target_label: __param_node}"
  echo "  - {source_labels: [__address__], target_label: instance}"
  echo "  - {target_label: __address__, replacement: \"127.0.0.1:$1\"}"
}

# prom_text_fallback: the prom_job OPTION of deploy/prometheus/prometheus-3.yml's scrape settings
# on Prometheus 3.x (PROM_MAJOR, lib.sh use_prometheus): a body without a valid Content-Type is
# read as text. Nothing on 2.x (no such setting).
prom_text_fallback() {
  [ "${PROM_MAJOR:-}" = 2 ] || echo "fallback_scrape_protocol: PrometheusText0.0.4"
}
