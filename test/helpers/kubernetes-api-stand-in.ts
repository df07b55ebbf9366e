import { randomUUID } from "node:crypto";
import { KubeConfig, type V1Job, type V1Pod, type V1PodStatus, type V1Secret } from "@kubernetes/client-node";
import { type StandInAnswer, type StandInRequest, startStandIn } from "./provider-stand-ins.js";

/**
 * A stand-in for the Kubernetes API server: a local HTTP server on 127.0.0.1 answering exactly the
 * requests the Kubernetes launcher makes (Jobs: create, list, delete; Secrets: create; Pods: list),
 * in the API's own paths and shapes, from an in-memory store. It runs nothing: creating a Job
 * adds the one Pending Pod the Job controller would create, deleting a Job removes its Pods and the
 * objects it owns (as the garbage collector would), and a test sets a Pod's status to play what a
 * kubelet or the scheduler would report. Every request is recorded, as RBAC's (API group, resource, verb) too.
 */
export interface KubeRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  body: unknown;
  /** RBAC's names: ("batch", "jobs", "create"), ("", "pods", "list"), ... ("unknown" for a path this stand-in does not serve). */
  apiGroup: string;
  resource: string;
  verb: string;
}

export interface KubernetesApiStandIn {
  baseUrl: string;
  token: string;
  requests: KubeRequest[];
  jobs(namespace: string): V1Job[];
  secrets(namespace: string): V1Secret[];
  pods(namespace: string): V1Pod[];
  /** Adds a Job as an earlier server would have created it (with its Pod). */
  addJob(namespace: string, job: V1Job): V1Job;
  /** Replaces the status of the Pod of Job `jobName`, as the kubelet or the scheduler would. */
  setPodStatus(namespace: string, jobName: string, status: V1PodStatus): void;
  /** The next `verb` of `resource` is refused with `code` (as RBAC or an admission plugin would). */
  refuseNext(resource: string, verb: string, code: number): void;
  /** A KubeConfig for this stand-in (token auth over plain HTTP); another token is refused (401). */
  kubeConfig(token?: string): KubeConfig;
  close(): Promise<void>;
}

const COLLECTION =
  /^\/(?:apis\/(batch)\/v1|api\/v1)\/namespaces\/([^/]+)\/(jobs|secrets|pods)(?:\/([^/]+))?$/;

export async function startKubernetesApiStandIn(): Promise<KubernetesApiStandIn> {
  const token = randomUUID();
  const requests: KubeRequest[] = [];
  const refusals: Array<{ resource: string; verb: string; code: number }> = [];
  const store = {
    jobs: new Map<string, V1Job>(),
    secrets: new Map<string, V1Secret>(),
    pods: new Map<string, V1Pod>(),
  };
  const key = (namespace: string, name: string) => `${namespace}/${name}`;
  const inNamespace = <T>(map: Map<string, T>, namespace: string) =>
    [...map.entries()].filter(([k]) => k.startsWith(`${namespace}/`)).map(([, v]) => v);

  function createJob(namespace: string, job: V1Job): V1Job {
    const name = job.metadata?.name ?? "";
    const stored: V1Job = {
      ...job,
      metadata: { ...job.metadata, namespace, uid: randomUUID(), creationTimestamp: new Date() },
      status: {},
    };
    store.jobs.set(key(namespace, name), stored);
    const podName = `${name}-${randomUUID().slice(0, 5)}`;
    store.pods.set(key(namespace, podName), {
      apiVersion: "v1",
      kind: "Pod",
      metadata: {
        name: podName,
        namespace,
        uid: randomUUID(),
        labels: { ...job.spec?.template.metadata?.labels, "job-name": name },
        ownerReferences: [{ apiVersion: "batch/v1", kind: "Job", name, uid: stored.metadata?.uid ?? "" }],
      },
      spec: job.spec?.template.spec ?? { containers: [] },
      status: { phase: "Pending" },
    });
    return stored;
  }

  function deleteOwnedBy(namespace: string, uid: string): void {
    for (const map of [store.pods, store.secrets] as Map<string, V1Pod | V1Secret>[])
      for (const [k, object] of map)
        if (k.startsWith(`${namespace}/`) && object.metadata?.ownerReferences?.some((ref) => ref.uid === uid))
          map.delete(k);
  }

  const status = (code: number, reason: string, message: string): StandInAnswer => ({
    status: code,
    json: { kind: "Status", apiVersion: "v1", status: "Failure", reason, message, code },
  });
  const list = (kind: string, items: unknown[]): StandInAnswer => ({
    json: { kind, apiVersion: kind === "JobList" ? "batch/v1" : "v1", metadata: {}, items },
  });

  function handle(request: StandInRequest, recorded: KubeRequest): StandInAnswer {
    if (request.headers.authorization !== `Bearer ${token}`)
      return status(401, "Unauthorized", "Unauthorized");
    const match = COLLECTION.exec(request.url.pathname);
    if (!match) return status(404, "NotFound", `the stand-in does not serve ${request.url.pathname}`);
    const [, , namespace = "", resource = "", name] = match;
    const selector = matchesSelector(request.url.searchParams.get("labelSelector"));
    const body = recorded.body as V1Job & V1Secret;
    const refusal = refusals.findIndex((r) => r.resource === resource && r.verb === recorded.verb);
    if (refusal >= 0) {
      const [{ code } = { code: 403 }] = refusals.splice(refusal, 1);
      return status(
        code,
        "Forbidden",
        `${resource} is forbidden: cannot ${recorded.verb} ${resource} (stand-in refusal)`,
      );
    }
    switch (`${recorded.verb} ${resource}`) {
      case "create jobs": {
        if (store.jobs.has(key(namespace, body.metadata?.name ?? "")))
          return status(409, "AlreadyExists", `jobs.batch "${body.metadata?.name}" already exists`);
        return { status: 201, json: createJob(namespace, body) };
      }
      case "list jobs":
        return list("JobList", inNamespace(store.jobs, namespace).filter(selector));
      case "delete jobs": {
        const job = store.jobs.get(key(namespace, name ?? ""));
        if (!job) return status(404, "NotFound", `jobs.batch "${name}" not found`);
        store.jobs.delete(key(namespace, name ?? ""));
        deleteOwnedBy(namespace, job.metadata?.uid ?? "");
        return {
          json: { kind: "Status", apiVersion: "v1", status: "Success", details: { name, kind: "jobs" } },
        };
      }
      case "create secrets": {
        if (store.secrets.has(key(namespace, body.metadata?.name ?? "")))
          return status(409, "AlreadyExists", `secrets "${body.metadata?.name}" already exists`);
        const secret: V1Secret = { ...body, metadata: { ...body.metadata, namespace, uid: randomUUID() } };
        store.secrets.set(key(namespace, body.metadata?.name ?? ""), secret);
        return { status: 201, json: secret };
      }
      case "list pods":
        return list("PodList", inNamespace(store.pods, namespace).filter(selector));
      default:
        return status(405, "MethodNotAllowed", `the stand-in does not serve ${recorded.verb} ${resource}`);
    }
  }

  const server = await startStandIn((request) => {
    const match = COLLECTION.exec(request.url.pathname);
    const resource = match?.[3] ?? "unknown";
    const named = match?.[4] !== undefined;
    const verb =
      { POST: "create", DELETE: "delete", PUT: "update", PATCH: "patch" }[request.method] ??
      (named ? "get" : request.url.searchParams.get("watch") === "true" ? "watch" : "list");
    const text = request.body.toString("utf8");
    const recorded: KubeRequest = {
      method: request.method,
      path: request.url.pathname,
      query: request.url.searchParams,
      body: text ? JSON.parse(text) : undefined,
      apiGroup: match?.[1] ?? "",
      resource,
      verb,
    };
    requests.push(recorded);
    return handle(request, recorded);
  });

  return {
    baseUrl: server.baseUrl,
    token,
    requests,
    jobs: (namespace) => inNamespace(store.jobs, namespace),
    secrets: (namespace) => inNamespace(store.secrets, namespace),
    pods: (namespace) => inNamespace(store.pods, namespace),
    addJob: (namespace, job) => createJob(namespace, job),
    refuseNext: (resource, verb, code) => refusals.push({ resource, verb, code }),
    setPodStatus(namespace, jobName, podStatus) {
      const pod = inNamespace(store.pods, namespace).find(
        (p) => p.metadata?.labels?.["job-name"] === jobName,
      );
      if (!pod) throw new Error(`no Pod of Job ${jobName} in ${namespace}`);
      pod.status = podStatus;
    },
    kubeConfig(userToken = token) {
      const kc = new KubeConfig();
      kc.loadFromOptions({
        clusters: [{ name: "stand-in", server: server.baseUrl, skipTLSVerify: true }],
        users: [{ name: "launcher", token: userToken }],
        contexts: [{ name: "stand-in", cluster: "stand-in", user: "launcher" }],
        currentContext: "stand-in",
      });
      return kc;
    },
    close: server.close,
  };
}

/** Equality-based label selectors (`a=b,c=d`), the only kind the launcher sends. */
function matchesSelector(
  selector: string | null,
): (object: { metadata?: { labels?: Record<string, string> } }) => boolean {
  const wanted = (selector ?? "")
    .split(",")
    .filter(Boolean)
    .map((term) => {
      const [name = "", value = ""] = term.split("=");
      return [name, value] as const;
    });
  return (object) => wanted.every(([name, value]) => object.metadata?.labels?.[name] === value);
}
