import "./style.css";
import { showLobby } from "./lobby.js";
import { Table } from "./table.js";

const root = document.getElementById("app")!;
const params = new URLSearchParams(window.location.search);
const game = params.get("game");
const match = params.get("match");
if (game && match) void new Table(root, game, match).start();
else void showLobby(root);
