// Test helper: whether ONNX Runtime's WebGPU provider runs on this machine (a GPU with its Vulkan driver, or the CPU
// Vulkan driver `.ci/lavapipe.sh` provides), by metrl's own device check. Where it does not, the WebGPU tests skip
// and say why once; CI (.ci/run) sets METRL_REQUIRE_WEBGPU=1, which makes a missing provider fail the test file
// instead, so CI can never pass with them skipped.
import { checkDevice } from '../../models/onnx/device.ts';

function missing(): string | null {
  try {
    checkDevice('webgpu');
    return null;
  } catch (error) {
    return (error as Error).message;
  }
}

/** Why WebGPU cannot run here, or null when it can. */
export const WEBGPU_MISSING = missing();
if (WEBGPU_MISSING !== null) {
  if (process.env.METRL_REQUIRE_WEBGPU === '1')
    throw new Error(`METRL_REQUIRE_WEBGPU=1, but WebGPU does not run here: ${WEBGPU_MISSING}`);
  console.warn(
    `WebGPU tests skipped: ${WEBGPU_MISSING} (\`eval "$(bash .ci/lavapipe.sh)"\` provides a CPU Vulkan driver)`,
  );
}
