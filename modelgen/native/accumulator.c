/* The implicit-state accumulator as a native Triton backend (backend "seqfuzz_accum").
 *
 * Per request, elementwise over INPUT's shape, with the state Triton carries for the slot:
 *
 *     new    = INPUT_STATE           if not READY   (a padding row keeps its slot's state)
 *              INPUT                 if START       (unless the state starts from data: then
 *                                                    INPUT + INPUT_STATE, the file's value)
 *              INPUT + INPUT_STATE   otherwise
 *     OUTPUT = OUTPUT_STATE = new
 *
 * and, where the config declares it, SEQFUZZ_LIVE_ROWS (INT32, OUTPUT's shape): how many of the
 * execution's rows were READY, which the fuzzer's coverage reads (modelgen.variants.LIVE_ROWS_OUTPUT),
 * and SEQFUZZ_ROW, the request's row in the execution (ROW_OUTPUT).
 *
 * the same contract as modelgen's ONNX, TensorFlow and TensorRT graphs, so the fuzzer's
 * reference model for implicit state judges all of them. The state lives in Triton's core
 * (sequence_batching.state): this file keeps nothing between executions. END and CORRID are
 * declared by some configs and not read here. A model may declare a second state
 * (INPUT_STATE_B -> OUTPUT_STATE_B, see second_state) that must move in step with the first.
 *
 * The backend API is declared below from its documented C signatures (tritonbackend.h and
 * tritonserver.h of Triton's core repository); the symbols resolve against the server's
 * libtritonserver when the server loads this library, so building needs no Triton headers.
 * Only functions present since backend API 1.4 (2021) are used, so one build serves every
 * nvidia-pytriton release; TRITONBACKEND_Initialize still refuses another major version.
 */
#define _GNU_SOURCE /* memmem */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- the part of the backend API this backend uses ---- */
typedef struct TRITONSERVER_Error TRITONSERVER_Error;
typedef struct TRITONBACKEND_Backend TRITONBACKEND_Backend;
typedef struct TRITONBACKEND_Model TRITONBACKEND_Model;
typedef struct TRITONBACKEND_ModelInstance TRITONBACKEND_ModelInstance;
typedef struct TRITONSERVER_Message TRITONSERVER_Message;
typedef struct TRITONBACKEND_Request TRITONBACKEND_Request;
typedef struct TRITONBACKEND_Response TRITONBACKEND_Response;
typedef struct TRITONBACKEND_Input TRITONBACKEND_Input;
typedef struct TRITONBACKEND_Output TRITONBACKEND_Output;
typedef struct TRITONBACKEND_State TRITONBACKEND_State;

typedef enum {
  TYPE_INVALID, TYPE_BOOL, TYPE_UINT8, TYPE_UINT16, TYPE_UINT32, TYPE_UINT64, TYPE_INT8,
  TYPE_INT16, TYPE_INT32, TYPE_INT64, TYPE_FP16, TYPE_FP32, TYPE_FP64, TYPE_BYTES, TYPE_BF16
} DataType; /* TRITONSERVER_DataType */
typedef enum { MEMORY_CPU, MEMORY_CPU_PINNED, MEMORY_GPU } MemoryType; /* TRITONSERVER_MemoryType */
enum { ERROR_UNKNOWN, ERROR_INTERNAL, ERROR_NOT_FOUND, ERROR_INVALID_ARG, ERROR_UNAVAILABLE,
       ERROR_UNSUPPORTED }; /* TRITONSERVER_Error_Code */
enum { LOG_INFO, LOG_WARN, LOG_ERROR }; /* TRITONSERVER_LogLevel */
enum { REQUEST_RELEASE_ALL = 1 };
enum { RESPONSE_COMPLETE_FINAL = 1 };
#define API_MAJOR 1u
#define API_MINOR 4u

TRITONSERVER_Error* TRITONSERVER_ErrorNew(int code, const char* msg);
void TRITONSERVER_ErrorDelete(TRITONSERVER_Error* error);
const char* TRITONSERVER_ErrorMessage(TRITONSERVER_Error* error);
TRITONSERVER_Error* TRITONSERVER_LogMessage(int level, const char* file, int line, const char* msg);
TRITONSERVER_Error* TRITONSERVER_MessageSerializeToJson(TRITONSERVER_Message* message, const char** base,
                                                       size_t* byte_size);
TRITONSERVER_Error* TRITONSERVER_MessageDelete(TRITONSERVER_Message* message);
TRITONSERVER_Error* TRITONBACKEND_ApiVersion(uint32_t* major, uint32_t* minor);
TRITONSERVER_Error* TRITONBACKEND_ModelConfig(TRITONBACKEND_Model* model, uint32_t config_version,
                                              TRITONSERVER_Message** model_config);
TRITONSERVER_Error* TRITONBACKEND_ModelSetState(TRITONBACKEND_Model* model, void* state);
TRITONSERVER_Error* TRITONBACKEND_ModelState(TRITONBACKEND_Model* model, void** state);
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceModel(TRITONBACKEND_ModelInstance* instance,
                                                     TRITONBACKEND_Model** model);
TRITONSERVER_Error* TRITONBACKEND_RequestInput(TRITONBACKEND_Request* request, const char* name,
                                               TRITONBACKEND_Input** input);
TRITONSERVER_Error* TRITONBACKEND_InputProperties(TRITONBACKEND_Input* input, const char** name,
                                                  DataType* datatype, const int64_t** shape,
                                                  uint32_t* dims_count, uint64_t* byte_size,
                                                  uint32_t* buffer_count);
TRITONSERVER_Error* TRITONBACKEND_InputBuffer(TRITONBACKEND_Input* input, uint32_t index,
                                              const void** buffer, uint64_t* buffer_byte_size,
                                              MemoryType* memory_type, int64_t* memory_type_id);
TRITONSERVER_Error* TRITONBACKEND_RequestOutputCount(TRITONBACKEND_Request* request, uint32_t* count);
TRITONSERVER_Error* TRITONBACKEND_RequestOutputName(TRITONBACKEND_Request* request, uint32_t index,
                                                    const char** name);
TRITONSERVER_Error* TRITONBACKEND_RequestRelease(TRITONBACKEND_Request* request, uint32_t flags);
TRITONSERVER_Error* TRITONBACKEND_ResponseNew(TRITONBACKEND_Response** response,
                                              TRITONBACKEND_Request* request);
TRITONSERVER_Error* TRITONBACKEND_ResponseOutput(TRITONBACKEND_Response* response,
                                                 TRITONBACKEND_Output** output, const char* name,
                                                 DataType datatype, const int64_t* shape,
                                                 uint32_t dims_count);
TRITONSERVER_Error* TRITONBACKEND_OutputBuffer(TRITONBACKEND_Output* output, void** buffer,
                                               uint64_t byte_size, MemoryType* memory_type,
                                               int64_t* memory_type_id);
TRITONSERVER_Error* TRITONBACKEND_ResponseSend(TRITONBACKEND_Response* response, uint32_t flags,
                                               TRITONSERVER_Error* error);
TRITONSERVER_Error* TRITONBACKEND_StateNew(TRITONBACKEND_State** state, TRITONBACKEND_Request* request,
                                           const char* name, DataType datatype, const int64_t* shape,
                                           uint32_t dims_count);
TRITONSERVER_Error* TRITONBACKEND_StateBuffer(TRITONBACKEND_State* state, void** buffer,
                                              uint64_t byte_size, MemoryType* memory_type,
                                              int64_t* memory_type_id);
TRITONSERVER_Error* TRITONBACKEND_StateUpdate(TRITONBACKEND_State* state);
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceReportStatistics(
    TRITONBACKEND_ModelInstance* instance, TRITONBACKEND_Request* request, bool success,
    uint64_t exec_start_ns, uint64_t compute_start_ns, uint64_t compute_end_ns, uint64_t exec_end_ns);
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceReportBatchStatistics(
    TRITONBACKEND_ModelInstance* instance, uint64_t batch_size, uint64_t exec_start_ns,
    uint64_t compute_start_ns, uint64_t compute_end_ns, uint64_t exec_end_ns);

/* ---- helpers ---- */
#define MAX_DIMS 8
#define TRY(expr)                              \
  do {                                         \
    TRITONSERVER_Error* err_ = (expr);         \
    if (err_ != NULL) return err_;             \
  } while (0)

static uint64_t now_ns(void) {
  struct timespec ts; /* the core stamps its statistics with the steady clock */
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static TRITONSERVER_Error* fail(int code, const char* what, const char* name) {
  char msg[256];
  snprintf(msg, sizeof msg, "seqfuzz_accum: %s '%s'", what, name);
  return TRITONSERVER_ErrorNew(code, msg);
}

/* A tensor's bytes copied out of however many CPU buffers Triton split it into. */
typedef struct {
  DataType dtype;
  int64_t shape[MAX_DIMS];
  uint32_t dims;
  uint64_t bytes;
  unsigned char* data; /* malloc'd; free with tensor_free */
} Tensor;

static void tensor_free(Tensor* t) {
  free(t->data);
  t->data = NULL;
}

static TRITONSERVER_Error* read_input(TRITONBACKEND_Request* request, const char* name, Tensor* out) {
  TRITONBACKEND_Input* input;
  const char* ignored;
  const int64_t* shape;
  uint32_t buffers;
  TRY(TRITONBACKEND_RequestInput(request, name, &input));
  TRY(TRITONBACKEND_InputProperties(input, &ignored, &out->dtype, &shape, &out->dims, &out->bytes, &buffers));
  if (out->dims > MAX_DIMS) return fail(ERROR_INVALID_ARG, "too many dims in input", name);
  memcpy(out->shape, shape, out->dims * sizeof *shape);
  out->data = malloc(out->bytes ? out->bytes : 1);
  if (out->data == NULL) return fail(ERROR_INTERNAL, "out of memory reading", name);
  uint64_t at = 0;
  for (uint32_t i = 0; i < buffers; ++i) {
    const void* buffer;
    uint64_t size;
    MemoryType kind = MEMORY_CPU;
    int64_t kind_id = 0;
    TRY(TRITONBACKEND_InputBuffer(input, i, &buffer, &size, &kind, &kind_id));
    if (kind == MEMORY_GPU) return fail(ERROR_UNSUPPORTED, "GPU memory given for input", name);
    if (at + size > out->bytes) return fail(ERROR_INVALID_ARG, "buffers overrun input", name);
    memcpy(out->data + at, buffer, size);
    at += size;
  }
  if (at != out->bytes) return fail(ERROR_INVALID_ARG, "buffers short of input", name);
  return NULL;
}

/* A control input's first element, read as true/false (INT32 0/1 or BOOL controls). */
static TRITONSERVER_Error* read_flag(TRITONBACKEND_Request* request, const char* name, bool* flag) {
  Tensor t = {0};
  TRITONSERVER_Error* err = read_input(request, name, &t);
  if (err == NULL) {
    if (t.dtype == TYPE_INT32 && t.bytes >= 4) {
      int32_t v;
      memcpy(&v, t.data, sizeof v);
      *flag = v != 0;
    } else if (t.dtype == TYPE_BOOL && t.bytes >= 1) {
      *flag = t.data[0] != 0;
    } else {
      err = fail(ERROR_INVALID_ARG, "control must be INT32 or BOOL", name);
    }
  }
  tensor_free(&t);
  return err;
}

/* The accumulator's rule, in place over `sum` (which holds INPUT on entry). */
static void accumulate(DataType dtype, unsigned char* sum, const unsigned char* state, uint64_t bytes,
                       bool start, bool ready, bool adds_initial_state) {
  if (!ready) {
    memcpy(sum, state, bytes);
    return;
  }
  if (start && !adds_initial_state) return;
  if (dtype == TYPE_INT32) {
    for (uint64_t i = 0; i < bytes / 4; ++i) {
      int32_t a, b;
      memcpy(&a, sum + 4 * i, 4);
      memcpy(&b, state + 4 * i, 4);
      a = (int32_t)((uint32_t)a + (uint32_t)b); /* wraps like the graphs do, without UB */
      memcpy(sum + 4 * i, &a, 4);
    }
  } else if (dtype == TYPE_INT64) {
    for (uint64_t i = 0; i < bytes / 8; ++i) {
      int64_t a, b;
      memcpy(&a, sum + 8 * i, 8);
      memcpy(&b, state + 8 * i, 8);
      a = (int64_t)((uint64_t)a + (uint64_t)b);
      memcpy(sum + 8 * i, &a, 8);
    }
  } else {
    for (uint64_t i = 0; i < bytes / 4; ++i) {
      float a, b;
      memcpy(&a, sum + 4 * i, 4);
      memcpy(&b, state + 4 * i, 4);
      a += b;
      memcpy(sum + 4 * i, &a, 4);
    }
  }
}

static bool output_requested(TRITONBACKEND_Request* request, const char* name) {
  uint32_t count = 0;
  if (TRITONBACKEND_RequestOutputCount(request, &count) != NULL) return true;
  for (uint32_t i = 0; i < count; ++i) {
    const char* requested;
    if (TRITONBACKEND_RequestOutputName(request, i, &requested) == NULL && strcmp(requested, name) == 0)
      return true;
  }
  return false;
}

/* Whether a model's state starts from a data file: its config names a non-empty data_file
 * (Triton prints every field of the config as JSON, an empty data_file for zero_data). */
static bool names_a_data_file(const char* json, size_t size) {
  static const char key[] = "\"data_file\"";
  const char* end = json + size;
  for (const char* at = json; (at = memmem(at, (size_t)(end - at), key, sizeof key - 1)) != NULL; ++at) {
    const char* p = at + sizeof key - 1;
    while (p < end && (*p == ' ' || *p == ':')) ++p;
    if (p + 1 < end && p[0] == '"' && p[1] != '"') return true;
  }
  return false;
}

/* The model state is a flag, not an allocation: these two addresses stand for its values. */
static const char FROM_DATA = 1, FROM_ZERO = 0;

/* `data` (`like`'s type and shape) as the new value of state `name`: committed to the core. */
static TRITONSERVER_Error* write_state(TRITONBACKEND_Request* request, const char* name, const Tensor* like,
                                       const unsigned char* data) {
  TRITONBACKEND_State* state;
  void* buffer;
  MemoryType kind = MEMORY_CPU;
  int64_t kind_id = 0;
  TRY(TRITONBACKEND_StateNew(&state, request, name, like->dtype, like->shape, like->dims));
  TRY(TRITONBACKEND_StateBuffer(state, &buffer, like->bytes, &kind, &kind_id));
  if (kind == MEMORY_GPU) return fail(ERROR_UNSUPPORTED, "GPU memory given for", name);
  memcpy(buffer, data, like->bytes);
  return TRITONBACKEND_StateUpdate(state);
}

/* A model with a second state (INPUT_STATE_B -> OUTPUT_STATE_B) keeps the same running sum in both
 * and answers 2 * sum - sum_b: exactly the sum while the core hands both states of a slot
 * together, anything else as soon as it hands one a stale or foreign value. An FP32 pair that is
 * the same bits answers the sum as it is: 2 * sum would overflow past FLT_MAX / 2, and inf - inf
 * is NaN, where the sum itself is the answer IEEE gives. */
static void combine(DataType dtype, unsigned char* sum, const unsigned char* sum_b, uint64_t bytes) {
  size_t width = dtype == TYPE_INT64 ? 8 : 4;
  for (uint64_t i = 0; i < bytes / width; ++i) {
    if (dtype == TYPE_INT32) {
      uint32_t a, b;
      memcpy(&a, sum + 4 * i, 4);
      memcpy(&b, sum_b + 4 * i, 4);
      a = 2u * a - b;
      memcpy(sum + 4 * i, &a, 4);
    } else if (dtype == TYPE_INT64) {
      uint64_t a, b;
      memcpy(&a, sum + 8 * i, 8);
      memcpy(&b, sum_b + 8 * i, 8);
      a = 2u * a - b;
      memcpy(sum + 8 * i, &a, 8);
    } else {
      float a, b;
      memcpy(&a, sum + 4 * i, 4);
      memcpy(&b, sum_b + 4 * i, 4);
      if (memcmp(&a, &b, 4) != 0) a = 2.0f * a - b;
      memcpy(sum + 4 * i, &a, 4);
    }
  }
}

static bool has_input(TRITONBACKEND_Request* request, const char* name) {
  TRITONBACKEND_Input* input;
  TRITONSERVER_Error* err = TRITONBACKEND_RequestInput(request, name, &input);
  if (err == NULL) return true;
  TRITONSERVER_ErrorDelete(err);
  return false;
}

/* The second state, if the model has one: the same rule from INPUT (read again: the first
 * state's sum is already in the other copy), its new value committed, and the answer in `sum`
 * combined with it. A one-state model reads nothing more. */
static TRITONSERVER_Error* second_state(TRITONBACKEND_Request* request, unsigned char* sum, bool start, bool ready,
                                        bool adds_initial_state) {
  if (!has_input(request, "INPUT_STATE_B")) return NULL;
  Tensor input = {0}, state = {0};
  TRITONSERVER_Error* err = read_input(request, "INPUT", &input);
  if (err == NULL) err = read_input(request, "INPUT_STATE_B", &state);
  if (err == NULL && (state.dtype != input.dtype || state.bytes != input.bytes))
    err = fail(ERROR_INVALID_ARG, "INPUT and INPUT_STATE_B differ in type or size for", "INPUT_STATE_B");
  if (err == NULL) {
    accumulate(state.dtype, input.data, state.data, state.bytes, start, ready, adds_initial_state);
    err = write_state(request, "OUTPUT_STATE_B", &state, input.data);
  }
  if (err == NULL) combine(state.dtype, sum, input.data, state.bytes);
  tensor_free(&input);
  tensor_free(&state);
  return err;
}

/* An output of `bytes` bytes shaped like `like`, filled from `data`, where the request asks for it. */
static TRITONSERVER_Error* write_output(TRITONBACKEND_Request* request, TRITONBACKEND_Response* response,
                                       const char* name, DataType dtype, const Tensor* like, const void* data,
                                       uint64_t bytes) {
  if (!output_requested(request, name)) return NULL;
  TRITONBACKEND_Output* output;
  void* buffer;
  MemoryType kind = MEMORY_CPU;
  int64_t kind_id = 0;
  TRY(TRITONBACKEND_ResponseOutput(response, &output, name, dtype, like->shape, like->dims));
  TRY(TRITONBACKEND_OutputBuffer(output, &buffer, bytes, &kind, &kind_id));
  if (kind == MEMORY_GPU) return fail(ERROR_UNSUPPORTED, "GPU memory given for", name);
  memcpy(buffer, data, bytes);
  return NULL;
}

/* One request: its new state to Triton, its OUTPUT (and the execution's `live` rows, and its `row`
 * in it) into `response`. */
static TRITONSERVER_Error* run_one(TRITONBACKEND_Request* request, TRITONBACKEND_Response* response,
                                   bool adds_initial_state, int32_t live, int32_t row) {
  bool start = false, ready = false;
  TRY(read_flag(request, "START", &start));
  TRY(read_flag(request, "READY", &ready));
  Tensor input = {0}, state = {0};
  TRITONSERVER_Error* err = read_input(request, "INPUT", &input);
  if (err == NULL) err = read_input(request, "INPUT_STATE", &state);
  if (err == NULL && (input.dtype != state.dtype || input.bytes != state.bytes))
    err = fail(ERROR_INVALID_ARG, "INPUT and INPUT_STATE differ in type or size for", "INPUT");
  if (err == NULL && input.dtype != TYPE_INT32 && input.dtype != TYPE_INT64 && input.dtype != TYPE_FP32)
    err = fail(ERROR_UNSUPPORTED, "only INT32, INT64 and FP32 are summed, not the type of", "INPUT");
  if (err == NULL) {
    accumulate(input.dtype, input.data, state.data, input.bytes, start, ready, adds_initial_state);
    err = write_state(request, "OUTPUT_STATE", &state, input.data);
  }
  if (err == NULL) err = second_state(request, input.data, start, ready, adds_initial_state);
  if (err == NULL) err = write_output(request, response, "OUTPUT", input.dtype, &input, input.data, input.bytes);
  uint64_t elements = input.bytes / (input.dtype == TYPE_INT64 ? 8 : 4);
  int32_t* rows = err == NULL ? calloc(elements ? elements : 1, sizeof *rows) : NULL;
  if (err == NULL && rows == NULL) err = fail(ERROR_INTERNAL, "out of memory for", "SEQFUZZ_LIVE_ROWS");
  for (uint64_t i = 0; rows != NULL && i < elements; ++i) rows[i] = live;
  if (err == NULL) err = write_output(request, response, "SEQFUZZ_LIVE_ROWS", TYPE_INT32, &input, rows, elements * 4);
  for (uint64_t i = 0; rows != NULL && i < elements; ++i) rows[i] = row;
  if (err == NULL) err = write_output(request, response, "SEQFUZZ_ROW", TYPE_INT32, &input, rows, elements * 4);
  free(rows);
  tensor_free(&input);
  tensor_free(&state);
  return err;
}

static void log_error(TRITONSERVER_Error* err, const char* what) {
  if (err == NULL) return;
  char msg[512];
  snprintf(msg, sizeof msg, "seqfuzz_accum: %s: %s", what, TRITONSERVER_ErrorMessage(err));
  TRITONSERVER_Error* ignored = TRITONSERVER_LogMessage(LOG_ERROR, __FILE__, __LINE__, msg);
  if (ignored != NULL) TRITONSERVER_ErrorDelete(ignored);
  TRITONSERVER_ErrorDelete(err);
}

/* ---- the entry points Triton calls ---- */
TRITONSERVER_Error* TRITONBACKEND_Initialize(TRITONBACKEND_Backend* backend) {
  (void)backend;
  uint32_t major, minor;
  TRY(TRITONBACKEND_ApiVersion(&major, &minor));
  if (major != API_MAJOR || minor < API_MINOR) {
    char msg[160];
    snprintf(msg, sizeof msg, "seqfuzz_accum needs backend API %u.%u or a later 1.x, the server has %u.%u",
             API_MAJOR, API_MINOR, major, minor);
    return TRITONSERVER_ErrorNew(ERROR_UNSUPPORTED, msg);
  }
  return NULL;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInitialize(TRITONBACKEND_Model* model) {
  TRITONSERVER_Message* config;
  const char* json;
  size_t size;
  TRY(TRITONBACKEND_ModelConfig(model, 1, &config));
  TRITONSERVER_Error* err = TRITONSERVER_MessageSerializeToJson(config, &json, &size);
  bool from_data = err == NULL && names_a_data_file(json, size);
  log_error(TRITONSERVER_MessageDelete(config), "deleting the model config");
  if (err != NULL) return err;
  return TRITONBACKEND_ModelSetState(model, (void*)(from_data ? &FROM_DATA : &FROM_ZERO));
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceExecute(TRITONBACKEND_ModelInstance* instance,
                                                       TRITONBACKEND_Request** requests,
                                                       const uint32_t request_count) {
  uint64_t exec_start = now_ns();
  TRITONBACKEND_Model* model;
  void* flag;
  TRY(TRITONBACKEND_ModelInstanceModel(instance, &model));
  TRY(TRITONBACKEND_ModelState(model, &flag));
  bool adds_initial_state = flag == &FROM_DATA;
  int32_t live = 0;  /* the execution's READY rows (a request whose READY cannot be read counts none) */
  for (uint32_t r = 0; r < request_count; ++r) {
    bool ready = false;
    TRITONSERVER_Error* unread = read_flag(requests[r], "READY", &ready);
    if (unread != NULL) TRITONSERVER_ErrorDelete(unread);
    live += ready;
  }
  for (uint32_t r = 0; r < request_count; ++r) {
    TRITONBACKEND_Request* request = requests[r];
    uint64_t compute_start = now_ns();
    TRITONBACKEND_Response* response = NULL;
    TRITONSERVER_Error* err = TRITONBACKEND_ResponseNew(&response, request);
    if (err == NULL) {
      TRITONSERVER_Error* failed = run_one(request, response, adds_initial_state, live, (int32_t)r);
      /* The error, if any, travels in the response (Triton owns it from here). */
      log_error(TRITONBACKEND_ResponseSend(response, RESPONSE_COMPLETE_FINAL, failed), "sending a response");
      err = NULL;
      uint64_t end = now_ns();
      log_error(TRITONBACKEND_ModelInstanceReportStatistics(instance, request, failed == NULL, exec_start,
                                                            compute_start, end, end),
                "reporting statistics");
    } else {
      log_error(err, "creating a response");
    }
    log_error(TRITONBACKEND_RequestRelease(request, REQUEST_RELEASE_ALL), "releasing a request");
  }
  uint64_t exec_end = now_ns();
  log_error(TRITONBACKEND_ModelInstanceReportBatchStatistics(instance, request_count, exec_start, exec_start,
                                                              exec_end, exec_end),
            "reporting batch statistics");
  return NULL;
}
