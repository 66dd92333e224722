# Source this (bash, zsh or sh) to make `import torch` autoload the test-only
# device: it puts tests/emulated/torch_gcu/site (package hvda_test_gcu and its
# dist-info with the `torch.backends` entry point) first on PYTHONPATH. The
# caller exports the flavour and its runtime library:
#   HVDA_TEST_DEVICE_RUNTIME=tops (default): device 'gcu', HOROVOD_GCU_RUNTIME_LIB
#     (scripts/emulated_gcu.sh);
#   HVDA_TEST_DEVICE_RUNTIME=cuda: device 'emucuda', HOROVOD_CUDA_RUNTIME_LIB
#     (scripts/emulated_cuda.sh).
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
