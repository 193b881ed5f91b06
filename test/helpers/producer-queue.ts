// The BullMQ queue a Producer adds a job to, for tests that read what it added (states, schedulers, counts).
// Producer keeps its queues private, so that src/ adds and schedules jobs through its methods only; a test
// reads them on the same connection, closed with the producer.
import type { Queue } from "bullmq";
import type { Producer } from "../../src/queue/producer.ts";
import type { QueueName } from "../../src/queue/queues.ts";

export function queueOf(producer: Producer<object>, name: QueueName): Queue {
  return (producer as unknown as { queue(name: QueueName): Queue }).queue(name);
}
