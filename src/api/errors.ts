// The API error model, kept as one import path: the ApiError class and the predicates callers branch on
// with their messages (errors/api-error.ts) and the classification of HTTP answers (errors/classify.ts).
export {
  type ApiErrorKind,
  type ApiErrorFields,
  ApiError,
  EndpointGoneError,
  ThrottleDelayError,
  isPermanent,
  isApiError,
  isEndpointGone,
  isThrottleDelay,
  type UserState,
  userStateOf,
  isMissing,
  failureWords,
} from "./errors/api-error.ts";
export {
  type ErrorBody,
  parseErrorBody,
  type HttpFailure,
  meaningOf,
  classifyStatus,
  errorFromResponse,
  malformedError,
  networkError,
} from "./errors/classify.ts";
export { ENDPOINT_GONE_DESCRIPTION } from "./errors/api-error.ts";
