# Source this (bash, zsh or sh) to make `import torch` autoload the test-only
# 'gcu' device: it puts tests/emulated/torch_gcu/site (package hvda_test_gcu and
# its dist-info with the `torch.backends` entry point) first on PYTHONPATH.
# The device uses the TOPS runtime named by HOROVOD_GCU_RUNTIME_LIB, which the
# caller exports (scripts/emulated_gcu.sh does).
if [ -n "${BASH_VERSION:-}" ]; then
  eval '_hvda_gcu_src="${BASH_SOURCE[0]}"'
elif [ -n "${ZSH_VERSION:-}" ]; then
  eval '_hvda_gcu_src="${(%):-%x}"'
else
  _hvda_gcu_src="$0"
fi
_hvda_gcu_site="$(cd "$(dirname "$_hvda_gcu_src")" && pwd)/site"
case ":${PYTHONPATH:-}:" in
  *":${_hvda_gcu_site}:"*) ;;
  *) export PYTHONPATH="${_hvda_gcu_site}${PYTHONPATH:+:${PYTHONPATH}}" ;;
esac
unset _hvda_gcu_src _hvda_gcu_site
