// Errors meant for the person at the terminal: one line that says what is wrong and what to do.

export class UserError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
    this.name = "UserError";
  }
}

/** A required service (PostgreSQL, Redis) cannot be reached. */
export class ServiceUnavailableError extends UserError {
  constructor(
    readonly service: "PostgreSQL" | "Redis",
    readonly maskedUrl: string,
    readonly reason: string,
    readonly hint: string,
  ) {
    super(`cannot reach ${service} at ${maskedUrl} (${reason}). ${hint}`, 3);
    this.name = "ServiceUnavailableError";
  }
}
