# Sourced by the A/B scripts (ab-topk, ab-merge) after provenance.sh: parse_variant
# NAME=BINARY[@POLICY] sets variant_name, variant_policy and variant_bin — the bundled binary
# when BINARY is `bitonic`, else the one of that name beside it (an older build, say).
parse_variant() {
  variant_name=${1%%=*}
  local spec=${1#*=}
  variant_policy=""
  if [[ $spec == *@* ]]; then variant_policy=${spec#*@}; fi
  local exe=${spec%%@*}
  variant_bin=$bin
  if [[ $exe != bitonic ]]; then variant_bin=$(dirname "$bin")/$exe; fi
}
