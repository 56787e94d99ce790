"""Stateful accumulator for Triton's Python backend (written by modelgen; do not edit).

OUTPUT = sum of INPUT over the sequence's requests since its most recent START, inclusive.
The config's FLAVOUR parameter says where the running sum lives:
  corrid   - in a dict keyed by the CORRID control (per correlation id);
  slot     - per sequence slot, the way Triton keeps implicit state: the batch position under
             the direct strategy (padding requests carry READY=0), the instance under oldest
             with one candidate sequence;
  implicit - nowhere in the model: OUTPUT_STATE = INPUT + (READY and not START) * INPUT_STATE,
             relying on Triton to carry OUTPUT_STATE into the next INPUT_STATE. With an
             initial state from a data file (parameter INITIAL_SUM) START adds the state too:
             Triton hands a START the file's value.
With parameter ITERATIONS (an iterative_sequence model, decoupled, corrid flavour) a START without
END runs that many times: each execution adds INPUT again and answers the running sum, and all but
the last ask Triton to reschedule the request (it comes back with START 0).
"""
import json
import time

import numpy as np
import triton_python_backend_utils as pb_utils


def _scalar(request, name, default=None):
    tensor = pb_utils.get_input_tensor_by_name(request, name)
    if tensor is None:
        return default
    value = tensor.as_numpy().reshape(-1)[0]
    return value.decode() if isinstance(value, bytes) else value


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        params = config.get("parameters", {})
        self.flavour = params["FLAVOUR"]["string_value"]
        self.strategy = params["STRATEGY"]["string_value"]
        self.dtype = np.dtype(pb_utils.triton_string_to_numpy(config["output"][0]["data_type"]))
        self.sums = {}
        # Whether to answer SEQFUZZ_LIVE_ROWS (modelgen.variants.LIVE_ROWS_OUTPUT): where the config has it.
        self.says_live_rows = any(o["name"] == "SEQFUZZ_LIVE_ROWS" for o in config["output"])
        self.says_row = any(o["name"] == "SEQFUZZ_ROW" for o in config["output"])  # and SEQFUZZ_ROW
        # and SEQFUZZ_EXECUTION: a serial per execution, its instance's in the top bits, counted from
        # the clock so that a reloaded model does not repeat the serials it answered before
        self.says_execution = any(o["name"] == "SEQFUZZ_EXECUTION" for o in config["output"])
        name = args.get("model_instance_name", "")
        tail = name.rsplit("_", 2)[1:]  # Triton's <model>_<group>_<index>, else any name's own
        mark = int(tail[0]) * 8 + int(tail[1]) if len(tail) == 2 and all(t.isdigit() for t in tail) \
            else sum(map(ord, name))
        self.instance_bits = (mark % 127 + 1) << 24
        self.execution = int(time.time() * 1000)
        # A slow model (the nemesis's slow execution): every execution takes this long.
        self.delay_s = int(params.get("EXEC_DELAY_MS", {}).get("string_value", "0")) / 1000
        # A decoupled model answers through each request's response sender, and returns nothing.
        self.decoupled = bool(config.get("model_transaction_policy", {}).get("decoupled", False))
        # An implicit state that starts from a data file: START adds it like any request.
        self.start_resets = "INITIAL_SUM" not in params
        self.iterations = int(params.get("ITERATIONS", {}).get("string_value", "0"))
        self.runs = {}  # an iterating START's executions so far, by CORRID

    def execute(self, requests):
        self.execution += 1
        if self.delay_s:
            time.sleep(self.delay_s)
        ready = [bool(_scalar(r, "READY", 1)) for r in requests]  # read once: each row's, and their count
        live = sum(ready)  # the execution's live rows, answered beside OUTPUT where the config has it
        self.rows = iter(range(len(requests)))  # the row of each request _answer is given, in turn
        responses = [self._answer(self._one(position, request, ready[position]), live)
                     for position, request in enumerate(requests)]
        if not self.decoupled:
            return responses
        for request, response in zip(requests, responses):
            if self._again(request):
                request.set_release_flags(pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)
                request.get_response_sender().send(response)
            else:
                request.get_response_sender().send(response, flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None

    def _answer(self, outputs, live):
        if self.says_live_rows:
            rows = np.full(outputs[0].as_numpy().shape, live, np.int32)  # OUTPUT's shape
            outputs = [*outputs, pb_utils.Tensor("SEQFUZZ_LIVE_ROWS", rows)]
        if self.says_row:
            row = np.full(outputs[0].as_numpy().shape, next(self.rows, -1), np.int32)
            outputs = [*outputs, pb_utils.Tensor("SEQFUZZ_ROW", row)]
        if self.says_execution:
            serial = self.instance_bits + self.execution % (1 << 24)
            outputs = [*outputs, pb_utils.Tensor("SEQFUZZ_EXECUTION", np.full(outputs[0].as_numpy().shape, serial, np.int32))]
        return pb_utils.InferenceResponse(outputs)

    def _again(self, request):
        """An iterative START without END has executions left after this one."""
        if not self.iterations:
            return False
        key = _scalar(request, "CORRID")
        if _scalar(request, "START", 0):
            self.runs.pop(key, None)
            if not _scalar(request, "END", 0):
                self.runs[key] = 1
        elif key in self.runs:
            self.runs[key] += 1
        if self.runs.get(key, self.iterations) < self.iterations:
            return True
        self.runs.pop(key, None)
        return False

    def _one(self, position, request, ready):
        x = pb_utils.get_input_tensor_by_name(request, "INPUT").as_numpy().astype(self.dtype)
        start = bool(_scalar(request, "START", 0))
        end = bool(_scalar(request, "END", 0))

        if self.flavour == "implicit":
            prior = pb_utils.get_input_tensor_by_name(request, "INPUT_STATE").as_numpy().astype(self.dtype)
            if not ready:  # an empty batch position leaves the state as it was
                return [pb_utils.Tensor("OUTPUT", prior), pb_utils.Tensor("OUTPUT_STATE", prior)]
            total = (x + self.dtype.type(not (start and self.start_resets)) * prior).astype(self.dtype)
            return [pb_utils.Tensor("OUTPUT", total), pb_utils.Tensor("OUTPUT_STATE", total)]

        if not ready:  # an empty batch position: answer, leave every sum alone
            return [pb_utils.Tensor("OUTPUT", np.zeros_like(x))]

        if self.flavour == "corrid":
            key = _scalar(request, "CORRID")
        else:  # slot
            key = position if self.strategy == "direct" else 0
        base = self.dtype.type(0) if start else self.sums.get(key, self.dtype.type(0))
        total = (x + base).astype(self.dtype)
        if end and self.flavour == "corrid":
            self.sums.pop(key, None)
        else:
            self.sums[key] = total.reshape(-1)[0]
        return [pb_utils.Tensor("OUTPUT", total)]
