// `npm run check:jobs`: a job is added or scheduled only through the producer (src/queue/producer.ts), so its
// options come from its definition (docs/ARCHITECTURE.md#the-life-of-a-deviation). Read from the parsed code
// (scripts/checks/parse.ts), with what a type checker would say approximated by following values:
// - BullMQ's classes are built in one place, src/queue/backend.ts (on the configured engine), for the producer, the
//   operator's view and the worker host; a FlowProducer, or a Queue, Worker or QueueEvents built anywhere else fails, whether
//   the class comes from bullmq, an alias of it, a namespace, import() or require, or a module re-exporting it.
// - `.add`, `.addBulk` and `.upsertJobScheduler` outside the producer fail on a value that holds a queue: one
//   from a queue getter (`….queue(…)`), `new Queue`, a name typed `Queue` (or a Map, Record or array of them),
//   anything read out of a container that holds one (a map of queues, `queues.get(…)`, `queues[name]`, a loop
//   over them, a callback handed them), a function or member returning one, and names other files export so;
//   `.addBulk(` and `.upsertJobScheduler(` anywhere, and `.add(` whose job is one of the catalogue's. A Set's
//   `.add(x)` passes.
// - Running a job again is a side entrance too: `.retry(`, `.promote(`, `.changeDelay(`, `.moveToDelayed(` and
//   `.moveToWait(` on a job (a name typed `Job` or ending in "job"/"jobs", what any queue getter of jobs hands back
//   (getJob, getJobs, getFailed, getDelayed, … on any value, Job.fromId), and the elements of such a list in a
//   for-of or a `.map`/`.forEach`/`.filter` callback), and a queue's `.retryJobs(` and `.promoteJobs(`, are allowed
//   only where RERUNS says why. A queue reached through QueueAdmin.queue() is held to this as any other.
// One line per finding; exit 1 when there is any.
import { bare, type Check, literalString, type Node, parseTree, resolveSpecifier, runAsMain, type SourceFile, sourceOf, walk } from "./parse.ts";
import { checkRoot } from "./source-files.ts";

/** The one module allowed to add jobs and install schedulers. */
const PRODUCER = "src/queue/producer.ts";
/**
 * BullMQ's classes and the files that may build each (none for the others): the producer's queues, the operator's
 * view of them (src/queue/queue-admin.ts reads counts and failed jobs, pauses and retries, and adds nothing), and the
 * worker host's workers.
 */
const HOMES: Readonly<Record<string, readonly string[]>> = {
  // Built for either engine in src/queue/backend.ts, whose queue() the producer and QueueAdmin call, whose worker()
  // the worker host calls, and whose events() only tests and benchmarks call.
  Queue: ["src/queue/backend.ts"],
  Worker: ["src/queue/backend.ts"],
  FlowProducer: [],
  QueueEvents: ["src/queue/backend.ts"],
  QueueScheduler: [],
  Job: [],
};
const ADDS = new Set(["add", "addBulk", "upsertJobScheduler"]);
/** Methods of a container that hand back what it holds: `queues.get(name)`, `[...queues.values()]`. */
const ACCESSORS = new Set([
  "get",
  "at",
  "find",
  "findLast",
  "values",
  "entries",
  "filter",
  "slice",
  "pop",
  "shift",
  "flat",
  "concat",
  "toReversed",
  "toSorted",
]);
/** Methods that hand back one of a queue: `producer.queue(name)`. */
const GETTERS = new Set(["queue", "getQueue", "queueFor", "queueOf"]);

/**
 * Where a job may be run again in place: the operator's retry of a failed job that no table schedules (a download is
 * retried through its row, src/downloads/retry-now.ts), and the promotion of a download parked until its quota window
 * when the downloads table says the window has come.
 */
const RERUNS: Readonly<Record<string, readonly string[]>> = {
  "src/queue/queue-admin.ts": ["retry"],
  "src/queue/producer.ts": ["promote"],
  // The worker host parks the job it holds (its token) until the wait its pacing or outage says, as BullMQ's
  // DelayedError asks; src/queue/backend.ts hands an active job lost by a dead process back the same way
  // (src/queue/requeue.ts).
  "src/queue/worker-host.ts": ["moveToDelayed"],
  "src/queue/backend.ts": ["moveToDelayed"],
};

function propName(m: Node): string | null {
  if (m.type !== "MemberExpression") return null;
  if (!m.computed) return m.property.name ?? null;
  return literalString(m.property);
}

/** Unwraps what does not change the value: parentheses, casts, `!`, `await`, `?.`. */
function value(node: Node): Node {
  let n = bare(node);
  while (n.type === "AwaitExpression" || n.type === "ChainExpression") n = bare(n.type === "AwaitExpression" ? n.argument : n.expression);
  return n;
}

/** The names a binding pattern binds. */
function boundNames(p: Node | null | undefined): string[] {
  if (!p) return [];
  switch (p.type) {
    case "Identifier":
      return [p.name];
    case "AssignmentPattern":
      return boundNames(p.left);
    case "RestElement":
      return boundNames(p.argument);
    case "ArrayPattern":
      return p.elements.flatMap((e: Node | null) => boundNames(e));
    case "ObjectPattern":
      return p.properties.flatMap((q: Node) => boundNames(q.type === "RestElement" ? q.argument : q.value));
    case "TSParameterProperty":
      return boundNames(p.parameter);
    default:
      return [];
  }
}

function typeOf(p: Node | null | undefined): Node | null {
  if (!p) return null;
  if (p.type === "AssignmentPattern") return typeOf(p.left);
  if (p.type === "TSParameterProperty") return typeOf(p.parameter);
  return p.typeAnnotation ?? null;
}

/**
 * What a type says of a value: "queue" when it is one of `names` (alone or with null/undefined), "container" when
 * it holds one (`Map<string, Queue>`, `Queue[]`, `Record<…, Queue>`, a function returning one), else null. An
 * object type with a queue-typed member is no container: that member's name holds the queue (TSPropertySignature).
 */
type Kind = "queue" | "container";
function typeKind(type: Node | null | undefined, names: ReadonlySet<string>): Kind | null {
  if (!type) return null;
  const t = type.type === "TSTypeAnnotation" ? type.typeAnnotation : type;
  const named = (r: Node) => r.type === "TSTypeReference" && names.has(r.typeName.type === "Identifier" ? r.typeName.name : (r.typeName.right?.name ?? ""));
  if (named(t)) return "queue";
  if (t.type === "TSUnionType" && t.types.some(named) && t.types.every((u: Node) => named(u) || /Null|Undefined/.test(u.type))) return "queue";
  let hit = false;
  walk(t, (n) => {
    if (n.type === "TSTypeLiteral" || n.type === "TSInterfaceBody") return "skip";
    if (n.type === "TSFunctionType" || n.type === "TSConstructorType") {
      if (typeKind(n.returnType, names)) hit = true;
      return "skip";
    }
    if (named(n)) hit = true;
    return undefined;
  });
  return hit ? "container" : null;
}

/** A value that is sometimes a queue and sometimes holds one is read as holding one. */
function merge(a: Kind | null, b: Kind | null): Kind | null {
  if (!a) return b;
  if (!b) return a;
  return a === b ? a : "container";
}

/** What a file binds to BullMQ: local names of its classes (by BullMQ's name), namespaces. */
type BullBindings = { classes: Map<string, string>; namespaces: Set<string> };

function isBullSource(spec: string | null, fromFile: string): boolean {
  if (spec === null) return false;
  if (spec === "bullmq" || spec.startsWith("bullmq/")) return true;
  // dvault's own module re-exporting BullMQ's class is the same class.
  return resolveSpecifier(fromFile, spec) !== null;
}

function bullBindings(src: SourceFile): BullBindings {
  const classes = new Map<string, string>();
  const namespaces = new Set<string>();
  const fromModule = (init: Node | null | undefined): string | null | undefined => {
    if (!init) return undefined;
    const v = value(init);
    if (v.type === "ImportExpression") return literalString(v.source);
    if (v.type === "CallExpression" && bare(v.callee).type === "Identifier" && bare(v.callee).name === "require") return literalString(v.arguments[0]);
    return undefined;
  };
  walk(src.program, (n) => {
    if (n.type === "ImportDeclaration") {
      const spec = literalString(n.source);
      const bull = spec === "bullmq" || spec?.startsWith("bullmq/");
      for (const s of n.specifiers ?? []) {
        if (s.type === "ImportNamespaceSpecifier" && bull) namespaces.add(s.local.name);
        if (s.type === "ImportSpecifier") {
          const imported = s.imported.name ?? s.imported.value;
          if (Object.hasOwn(HOMES, imported) && isBullSource(spec, src.file)) classes.set(s.local.name, imported);
        }
      }
    }
    if (n.type === "VariableDeclarator") {
      const spec = fromModule(n.init);
      if (spec !== "bullmq") return;
      if (n.id.type === "Identifier") namespaces.add(n.id.name);
      if (n.id.type === "ObjectPattern")
        for (const p of n.id.properties) {
          const key = p.key?.name ?? p.key?.value;
          if (p.type === "Property" && Object.hasOwn(HOMES, key) && p.value.type === "Identifier") classes.set(p.value.name, key);
        }
    }
  });
  return { classes, namespaces };
}

/** BullMQ's name of the class a `new` builds, if it is one of BullMQ's. */
function bullClass(callee: Node, bull: BullBindings): string | null {
  const c = value(callee);
  if (c.type === "Identifier") return bull.classes.get(c.name) ?? null;
  if (c.type === "MemberExpression" && value(c.object).type === "Identifier" && bull.namespaces.has(value(c.object).name)) {
    const name = propName(c);
    return name && Object.hasOwn(HOMES, name) ? name : null;
  }
  return null;
}

/** What one file holds queues in: its variables (by scope) and member names, and the test of an expression. */
type QueueNames = {
  /** Variables, keyed "scope:name" (scope: the offset of the function that declares it, 0 for the module). */
  vars: Map<string, Kind>;
  /** Names of members (of classes, types, objects) that hold one. */
  props: Map<string, Kind>;
  /** Names of methods that return one (read as a member they are a function, called they hand one back). */
  methods: Map<string, Kind>;
  /** Module-level variables by name (what the file may export). */
  top(name: string): Kind | undefined;
  isQ(node: Node | null | undefined): Kind | null;
};

/** Member names that hold a queue, read from every file. */
type Members = { props: ReadonlyMap<string, Kind>; methods: ReadonlyMap<string, Kind> };

const FUNCTIONS = new Set(["FunctionDeclaration", "FunctionExpression", "ArrowFunctionExpression"]);

/**
 * Where each name of a file is declared, at the granularity of functions: `scopeOf(ancestors)` is the offset of the
 * nearest enclosing function (0 for the module), and `keyOf(identifier)` the "scope:name" of the declaration a
 * reference reads (the nearest enclosing function that declares the name, else the module).
 */
function scopes(src: SourceFile): { keyOf(id: Node): string; scopeOf(ancestors: readonly Node[]): number } {
  const scopeOf = (ancestors: readonly Node[]): number => {
    for (let i = ancestors.length - 1; i >= 0; i--) if (FUNCTIONS.has(ancestors[i]?.type ?? "")) return (ancestors[i] as Node).start;
    return 0;
  };
  const declared = new Map<number, Set<string>>();
  const declare = (scope: number, list: string[]) => {
    const set = declared.get(scope) ?? new Set<string>();
    for (const n of list) set.add(n);
    declared.set(scope, set);
  };
  const refs = new Map<Node, string>();
  walk(src.program, (n, ancestors) => {
    if (n.type === "VariableDeclarator") declare(scopeOf(ancestors), boundNames(n.id));
    if (FUNCTIONS.has(n.type)) {
      declare(n.start, n.params.flatMap(boundNames));
      if (n.type === "FunctionDeclaration" && n.id) declare(scopeOf(ancestors), [n.id.name]);
    }
    if (n.type === "ClassDeclaration" && n.id) declare(scopeOf(ancestors), [n.id.name]);
    if (n.type === "CatchClause" && n.param) declare(scopeOf(ancestors), boundNames(n.param));
    return undefined;
  });
  walk(src.program, (n, ancestors) => {
    if (n.type !== "Identifier") return undefined;
    let key = `0:${n.name}`;
    for (let i = ancestors.length - 1; i >= 0; i--) {
      const a = ancestors[i] as Node;
      if (FUNCTIONS.has(a.type) && declared.get(a.start)?.has(n.name)) {
        key = `${a.start}:${n.name}`;
        break;
      }
    }
    refs.set(n, key);
    return undefined;
  });
  return { keyOf: (id) => refs.get(id) ?? `0:${id.name}`, scopeOf };
}

/**
 * The variables and members of one file that hold a queue (or a container of queues, or a function that returns
 * one), grown to a fixpoint. `members`: member names that hold one, read from every file; `imported`: this file's
 * names bound to other files' exports that do. A member of a queue (`queue.name`) is not a queue; what is read out
 * of a container (`queues.get(name)`, `queues[name]`, `queues.sync`, a loop over it) may be one.
 */
function queueNames(src: SourceFile, bull: BullBindings, members: Members, imported: ReadonlyMap<string, Kind>): QueueNames {
  const vars = new Map<string, Kind>([...imported].map(([name, kind]) => [`0:${name}`, kind]));
  const props = new Map<string, Kind>();
  const methods = new Map<string, Kind>();
  const { keyOf, scopeOf } = scopes(src);
  const types = new Set(["Queue", ...[...bull.classes].filter(([, b]) => b === "Queue").map(([l]) => l)]);
  const prop = (p: string | null): Kind | null => (p === null ? null : (props.get(p) ?? members.props.get(p) ?? null));
  const method = (p: string | null): Kind | null => (p === null ? null : (methods.get(p) ?? members.methods.get(p) ?? prop(p)));
  const isQ = (node: Node | null | undefined): Kind | null => {
    if (!node) return null;
    if (node.type === "TSAsExpression" || node.type === "TSSatisfiesExpression") {
      const k = typeKind(node.typeAnnotation, types);
      if (k) return k;
    }
    const n = value(node);
    switch (n.type) {
      case "Identifier":
        return vars.get(keyOf(n)) ?? null;
      case "SpreadElement":
        return isQ(n.argument);
      case "ThisExpression":
        return null;
      case "MemberExpression":
        // queues.sync, queues[name]: read out of a container; queue.name: not a queue.
        return merge(n.computed ? null : prop(propName(n)), isQ(n.object) === "container" ? "container" : null);
      case "CallExpression": {
        const callee = value(n.callee);
        if (callee.type === "MemberExpression") {
          const p = propName(callee);
          if (p !== null && GETTERS.has(p)) return "queue";
          // producer.allQueues(), queues.get(name), queues.values(): a method that hands back what a container holds.
          if (!callee.computed && method(p)) return "container";
          if (p !== null && ACCESSORS.has(p) && isQ(callee.object) === "container") return "container";
          // Object.values(queues), Array.from(queues.values()).
          const obj = value(callee.object);
          const global = obj.type === "Identifier" && (obj.name === "Object" || obj.name === "Array");
          return global && n.arguments.some(isQ) ? "container" : null;
        }
        return isQ(callee) ? "container" : null;
      }
      case "NewExpression": {
        if (bullClass(n.callee, bull) === "Queue") return "queue";
        // new Map<QueueName, Queue>()
        if (n.typeArguments?.params?.some((t: Node) => typeKind(t, types))) return "container";
        // new Map([["sync", queue]]): a container built of queues.
        const c = value(n.callee);
        const collection = c.type === "Identifier" && ["Map", "Set", "WeakMap", "Array"].includes(c.name);
        return collection && n.arguments.some(isQ) ? "container" : null;
      }
      case "ObjectExpression":
        // Its methods are not what it holds.
        return n.properties.some((p: Node) => (p.type === "SpreadElement" ? isQ(p.argument) : !FUNCTIONS.has(p.value?.type ?? "") && !p.method && isQ(p.value)))
          ? "container"
          : null;
      case "ArrayExpression":
        return n.elements.some((e: Node | null) => isQ(e)) ? "container" : null;
      case "ConditionalExpression":
        return merge(isQ(n.consequent), isQ(n.alternate));
      case "LogicalExpression":
        return merge(isQ(n.left), isQ(n.right));
      case "ArrowFunctionExpression":
      case "FunctionExpression":
      case "FunctionDeclaration":
        return typeKind(n.returnType, types) || returnsQ(n) ? "container" : null;
      default:
        return null;
    }
  };
  const returnsQ = (fn: Node): boolean => {
    if (fn.body && fn.body.type !== "BlockStatement") return isQ(fn.body) !== null;
    let hit = false;
    walk(fn.body, (n) => {
      if (n !== fn.body && FUNCTIONS.has(n.type)) return "skip";
      if (n.type === "ReturnStatement" && isQ(n.argument)) hit = true;
      return undefined;
    });
    return hit;
  };
  const set = (map: Map<string, Kind>, keys: string[], kind: Kind | null) => {
    if (kind) for (const k of keys) map.set(k, merge(map.get(k) ?? null, kind) as Kind);
  };
  const bind = (pattern: Node | null | undefined, scope: number, kind: Kind | null) =>
    set(
      vars,
      boundNames(pattern).map((name) => `${scope}:${name}`),
      kind,
    );
  /** The variable or member an assignment or a `set`/`push` fills: the container that now holds one. */
  const fill = (target: Node, kind: Kind) => {
    let t = value(target);
    if (t.type === "MemberExpression") {
      const p = t.computed ? null : propName(t);
      if (p !== null) set(props, [p], kind);
      while (t.type === "MemberExpression") t = value(t.object);
      if (t.type === "Identifier") set(vars, [keyOf(t)], "container");
    } else if (t.type === "Identifier") set(vars, [keyOf(t)], kind);
  };
  const signature = () => `${[...vars].join()}|${[...props].join()}`;
  for (let pass = 0, before = "?"; pass < 8 && signature() !== before; pass++) {
    before = signature();
    walk(src.program, (n, ancestors) => {
      switch (n.type) {
        case "VariableDeclarator": {
          const kind = typeKind(typeOf(n.id), types) ?? isQ(n.init);
          // const { sync } = queues: what is read out of a container may be a queue.
          bind(n.id, scopeOf(ancestors), n.id.type === "Identifier" ? kind : kind && "container");
          break;
        }
        case "FunctionDeclaration":
        case "FunctionExpression":
        case "ArrowFunctionExpression":
          for (const p of n.params) {
            bind(p, n.start, typeKind(typeOf(p), types));
            // constructor(private readonly queue: Queue): this.queue holds it.
            if (p.type === "TSParameterProperty") set(props, boundNames(p), typeKind(typeOf(p), types));
          }
          if (n.type === "FunctionDeclaration" && n.id) bind(n.id, scopeOf(ancestors), isQ(n));
          break;
        case "PropertyDefinition":
        case "TSPropertySignature":
        case "Property": {
          const key = n.computed ? literalString(n.key) : (n.key?.name ?? literalString(n.key));
          const isMethod = n.type === "Property" && (n.method || FUNCTIONS.has(n.value?.type ?? ""));
          const kind = typeKind(n.typeAnnotation, types) ?? (n.value && n.type !== "TSPropertySignature" ? isQ(n.value) : null);
          if (key) set(isMethod ? methods : props, [key], kind);
          break;
        }
        case "MethodDefinition":
        case "TSMethodSignature": {
          const key = n.computed ? literalString(n.key) : (n.key?.name ?? literalString(n.key));
          const fn = n.type === "MethodDefinition" ? n.value : n;
          if (key && n.kind === "get") set(props, [key], typeKind(fn.returnType, types) ?? (returnsQ(fn) ? "container" : null));
          else if (key) set(methods, [key], typeKind(fn.returnType, types) || (n.type === "MethodDefinition" && returnsQ(fn)) ? "container" : null);
          break;
        }
        case "AssignmentExpression": {
          const kind = isQ(n.right);
          if (kind) fill(n.left, kind);
          break;
        }
        case "CallExpression": {
          const callee = value(n.callee);
          const p = propName(callee);
          // map.set(name, queue), list.push(queue): the container holds one.
          if ((p === "set" || p === "push" || p === "unshift") && n.arguments.some(isQ)) fill(callee.object, "container");
          // queues.forEach((q) => …), Object.values(queues).map((q) => …): the callback is handed what it holds.
          if (callee.type === "MemberExpression" && isQ(callee.object) === "container")
            for (const a of n.arguments)
              if (a.type === "ArrowFunctionExpression" || a.type === "FunctionExpression") for (const q of a.params) bind(q, a.start, "container");
          break;
        }
        case "ForOfStatement":
        case "ForInStatement":
          if (isQ(n.right)) {
            if (n.left.type === "VariableDeclaration") bind(n.left.declarations[0]?.id, scopeOf(ancestors), "container");
            else fill(n.left, "container");
          }
          break;
      }
      return undefined;
    });
  }
  return { vars, props, methods, isQ, top: (name) => vars.get(`0:${name}`) };
}

/** The catalogue's job names (`name: "sync.source"` in each definition) and the constants that hold them. */
function catalogue(files: readonly SourceFile[]): { jobNames: Set<string>; constants: Set<string> } {
  const jobNames = new Set<string>();
  const constants = new Set<string>();
  for (const src of files.filter((f) => /definitions?\.ts$/.test(f.rel)))
    walk(src.program, (n) => {
      if (n.type === "Property" && (n.key?.name ?? n.key?.value) === "name") {
        const v = literalString(n.value);
        if (v) jobNames.add(v);
      }
    });
  for (const src of files)
    walk(src.program, (n) => {
      if (n.type === "VariableDeclarator" && n.id.type === "Identifier" && jobNames.has(literalString(n.init) ?? "")) constants.add(n.id.name);
    });
  return { jobNames, constants };
}

/**
 * What hands back a job or a list of them: a queue's getters (`getJob`, `getJobs`, `getFailed`, `getDelayed`, …, on any
 * value: a queue reached through any door is still one) and `Job.fromId`.
 */
const JOB_GETTERS = new Set([
  "getJob",
  "getJobs",
  "getActive",
  "getCompleted",
  "getDelayed",
  "getFailed",
  "getPrioritized",
  "getWaiting",
  "getWaitingChildren",
  "fromId",
]);
/** Methods of a list whose callback is handed its elements: `jobs.map((j) => j.retry())`. */
const ITERATORS = new Set(["map", "flatMap", "forEach", "filter", "find", "findLast", "some", "every", "reduce", "reduceRight", "sort", "toSorted"]);
/** What runs a job again, or moves it to be taken sooner or again: on a job, then on a queue. */
const JOB_RERUNS = new Set(["retry", "promote", "changeDelay", "moveToDelayed", "moveToWait"]);
const QUEUE_RERUNS = new Set(["retryJobs", "promoteJobs"]);

/**
 * Names of one file that hold a job or a list of them: typed `Job`, read with a job getter (JOB_GETTERS) or out of
 * a list of jobs, looped over one (for-of, or a callback of `.map`, `.forEach`, `.filter`, …).
 */
function jobNames(src: SourceFile, bull: BullBindings): Set<string> {
  const names = new Set<string>();
  const types = new Set(["Job", ...[...bull.classes].filter(([, b]) => b === "Job").map(([l]) => l)]);
  const add = (p: Node | null | undefined) => {
    for (const name of boundNames(p)) names.add(name);
  };
  for (let pass = 0, before = -1; pass < 6 && names.size !== before; pass++) {
    before = names.size;
    walk(src.program, (n) => {
      if (n.type === "VariableDeclarator" && (typeKind(typeOf(n.id), types) || holdsJobs(n.init, names))) add(n.id);
      if (n.type === "AssignmentExpression" && n.left.type === "Identifier" && holdsJobs(n.right, names)) names.add(n.left.name);
      if (FUNCTIONS.has(n.type)) for (const p of n.params) if (typeKind(typeOf(p), types)) add(p);
      if ((n.type === "ForOfStatement" || n.type === "ForInStatement") && holdsJobs(n.right, names))
        add(n.left.type === "VariableDeclaration" ? n.left.declarations[0]?.id : n.left);
      if (n.type === "CallExpression") {
        const callee = value(n.callee);
        const method = propName(callee);
        if (method !== null && ITERATORS.has(method) && holdsJobs(callee.object, names))
          for (const a of n.arguments) if (FUNCTIONS.has(a.type)) for (const p of a.params) add(p);
      }
      return undefined;
    });
  }
  return names;
}

/** Whether an expression is a job or a list of jobs, by what `names` holds and what hands jobs back. */
function holdsJobs(node: Node | null | undefined, names: ReadonlySet<string>): boolean {
  if (!node) return false;
  const n = value(node);
  switch (n.type) {
    case "Identifier":
      return names.has(n.name) || /jobs?$/i.test(n.name);
    case "MemberExpression": {
      if (n.computed) return holdsJobs(n.object, names);
      const p = propName(n) ?? "";
      return names.has(p) || /jobs?$/i.test(p);
    }
    case "CallExpression": {
      const callee = value(n.callee);
      const method = propName(callee);
      if (method !== null && JOB_GETTERS.has(method)) return true;
      // list.filter(…), list.slice(…), Array.from(list), Promise.all(…) of jobs.
      if (callee.type === "MemberExpression" && method !== null && (ACCESSORS.has(method) || ITERATORS.has(method)) && holdsJobs(callee.object, names))
        return true;
      // Array.from(list), Promise.all(list), Object.values(byId).
      const global = value(callee.object ?? callee);
      return global.type === "Identifier" && ["Array", "Promise", "Object"].includes(global.name) && n.arguments.some((a: Node) => holdsJobs(a, names));
    }
    case "SpreadElement":
      return holdsJobs(n.argument, names);
    case "ArrayExpression":
      return n.elements.some((e: Node | null) => holdsJobs(e, names));
    case "ConditionalExpression":
      return holdsJobs(n.consequent, names) || holdsJobs(n.alternate, names);
    case "LogicalExpression":
      return holdsJobs(n.left, names) || holdsJobs(n.right, names);
    default:
      return false;
  }
}

/** The findings of the parsed src/ and jobs/ files of `root`. */
export function checkJobs(root: string, files: readonly SourceFile[] = parseTree(root)): string[] {
  const out: string[] = [];
  const { jobNames: names, constants } = catalogue(files);
  const bulls = new Map(files.map((f) => [f, bullBindings(f)]));
  // Names that hold a queue, read across files: members of classes, types and objects, and exports, from every
  // file; then each file again with them, so a map of queues built in one file is followed into another.
  const members = { props: new Map<string, Kind>(), methods: new Map<string, Kind>() };
  const exported = new Map<string, Map<string, Kind>>();
  let tainted = new Map<SourceFile, QueueNames>();
  for (let round = 0; round < 3; round++) {
    const found = { props: new Map<string, Kind>(), methods: new Map<string, Kind>() };
    tainted = new Map();
    for (const src of files) {
      const imported = new Map<string, Kind>();
      for (const stmt of src.program.body) {
        if (stmt.type !== "ImportDeclaration") continue;
        const target = resolveSpecifier(src.file, literalString(stmt.source) ?? "");
        const theirs = target ? exported.get(target) : undefined;
        for (const s of stmt.specifiers ?? []) {
          const kind = s.type === "ImportSpecifier" ? theirs?.get(s.imported.name ?? s.imported.value) : undefined;
          if (kind) imported.set(s.local.name, kind);
        }
      }
      const q = queueNames(src, bulls.get(src) as BullBindings, members, imported);
      tainted.set(src, q);
      const exports = new Map<string, Kind>();
      for (const stmt of src.program.body) {
        if (stmt.type !== "ExportNamedDeclaration" || !stmt.declaration) continue;
        const d = stmt.declaration;
        const declared: string[] = d.type === "VariableDeclaration" ? d.declarations.flatMap((x: Node) => boundNames(x.id)) : d.id ? [d.id.name] : [];
        for (const name of declared) {
          const kind = q.top(name);
          if (kind) exports.set(name, kind);
        }
      }
      exported.set(src.file, exports);
      for (const kind of ["props", "methods"] as const) for (const [key, k] of q[kind]) found[kind].set(key, merge(found[kind].get(key) ?? null, k) as Kind);
    }
    members.props = found.props;
    members.methods = found.methods;
  }
  for (const src of files) {
    const bull = bulls.get(src) as BullBindings;
    const q = tainted.get(src) as QueueNames;
    const jobs = jobNames(src, bull);
    walk(src.program, (n) => {
      if (n.type === "NewExpression") {
        const cls = bullClass(n.callee, bull);
        const homes = cls ? (HOMES[cls] ?? []) : [];
        if (cls && !homes.includes(src.rel)) {
          const where = homes.length > 0 ? `BullMQ's ${cls} is built only in ${homes.join(" and ")}` : `dvault builds no ${cls}`;
          out.push(`${src.rel}:${src.lineAt(n.start)}: new ${cls}(…): ${where}; jobs go through the producer (src/queue/producer.ts)`);
        }
      }
      if (src.rel !== PRODUCER) {
        // queue.add(…), queue.add.bind(queue), a map of queues' .get(…).add(…).
        if (n.type === "MemberExpression") {
          const method = propName(n);
          if (method && ADDS.has(method)) {
            const call = method !== "add" || q.isQ(n.object) !== null;
            if (call)
              out.push(
                `${src.rel}:${src.lineAt(n.property.start)}: ${sourceOf(src, n.object)}.${method}(…) adds a job around the producer; use Producer.enqueue or Producer.schedule (src/queue/producer.ts)`,
              );
          }
        }
        if (n.type === "CallExpression") {
          const callee = value(n.callee);
          const arg = n.arguments[0] ? value(n.arguments[0]) : null;
          const named =
            arg &&
            (names.has(literalString(arg) ?? "") ||
              (arg.type === "Identifier" && constants.has(arg.name)) ||
              (arg.type === "MemberExpression" && constants.has(propName(arg) ?? "")));
          if (propName(callee) === "add" && named && !q.isQ(callee.object))
            out.push(
              `${src.rel}:${src.lineAt(callee.property.start)}: ${sourceOf(src, callee.object)}.add(…) adds a job around the producer; use Producer.enqueue or Producer.schedule (src/queue/producer.ts)`,
            );
        }
        // const { add } = queue
        if (n.type === "VariableDeclarator" && n.id.type === "ObjectPattern" && q.isQ(n.init))
          for (const p of n.id.properties)
            if (ADDS.has(p.key?.name ?? ""))
              out.push(`${src.rel}:${src.lineAt(p.start)}: takes ${p.key.name} from a queue: jobs go through the producer (src/queue/producer.ts)`);
      }
      if (n.type === "CallExpression") {
        const callee = value(n.callee);
        const method = propName(callee);
        if (method !== null && (JOB_RERUNS.has(method) || QUEUE_RERUNS.has(method))) {
          if (RERUNS[src.rel]?.includes(method)) return undefined;
          const onJob = QUEUE_RERUNS.has(method) || holdsJobs(callee.object, jobs);
          if (onJob)
            out.push(
              `${src.rel}:${src.lineAt(callee.property.start)}: ${sourceOf(src, callee.object)}.${method}(…) runs a job again around the producer and its table; see RERUNS in scripts/checks/jobs-through-producer.ts`,
            );
        }
      }
      return undefined;
    });
  }
  return out;
}

export const jobsCheck: Check = {
  run: (root, files) => ({ findings: checkJobs(root, files) }),
  failed: (n) => `${n} job(s) added outside src/queue/producer.ts or run again outside RERUNS`,
  passed: "jobs: every job is added and scheduled through the producer",
};

runAsMain(import.meta, jobsCheck, checkRoot());
