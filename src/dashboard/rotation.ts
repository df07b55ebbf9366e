/**
 * The last refresh any tab of this browser made: the refresh token it traded (`used`) and the pair
 * it got. Refresh tokens work once, and a tab that takes its turn right after another one may
 * still read the old pair from localStorage (Chromium hands other tabs' localStorage writes on
 * asynchronously); IndexedDB is read through one store in order, so a tab about to trade a refresh
 * token learns here that it already was, and takes the new pair instead.
 */
export interface Rotation {
  used: string;
  access: string;
  refresh: string;
}

const DATABASE = "meetbot";
const STORE = "session";
const KEY = "rotation";

function openDatabase(): Promise<IDBDatabase> {
  return new Promise((resolve, reject) => {
    const request = indexedDB.open(DATABASE, 1);
    request.onupgradeneeded = () => request.result.createObjectStore(STORE);
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error ?? new Error("IndexedDB unavailable"));
  });
}

/** Runs `use` in one transaction; resolves with its request's result once the transaction is complete. */
async function inStore<T>(
  mode: IDBTransactionMode,
  use: (store: IDBObjectStore) => IDBRequest<T>,
): Promise<T> {
  const db = await openDatabase();
  try {
    return await new Promise<T>((resolve, reject) => {
      const transaction = db.transaction(STORE, mode);
      const request = use(transaction.objectStore(STORE));
      transaction.oncomplete = () => resolve(request.result);
      transaction.onerror = () => reject(transaction.error ?? new Error("IndexedDB transaction failed"));
      transaction.onabort = () => reject(transaction.error ?? new Error("IndexedDB transaction aborted"));
    });
  } finally {
    db.close();
  }
}

/** The last rotation, if any (and if this browser lets the page keep one). */
export async function lastRotation(): Promise<Rotation | undefined> {
  try {
    const value = (await inStore("readonly", (store) => store.get(KEY))) as Partial<Rotation> | undefined;
    return typeof value?.used === "string" &&
      typeof value.access === "string" &&
      typeof value.refresh === "string"
      ? { used: value.used, access: value.access, refresh: value.refresh }
      : undefined;
  } catch {
    return undefined;
  }
}

/** Keeps `rotation` for the other tabs; resolves once it is stored (or could not be). */
export async function recordRotation(rotation: Rotation | null): Promise<void> {
  try {
    if (rotation) await inStore("readwrite", (store) => store.put(rotation, KEY));
    else await inStore("readwrite", (store) => store.delete(KEY));
  } catch {
    // Private windows may refuse IndexedDB: tabs then only have the Web Lock and localStorage.
  }
}
