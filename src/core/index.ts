export * from "./bot-config.js";
export * from "./commands.js";
export * from "./events.js";
export * from "./login.js";
export * from "./platform.js";
export * from "./runner-env.js";
export * from "./status.js";
export * from "./net-address.js";
