// /data/* (static texts and the country list) and /placebo.
import { json } from "../http.ts";
import type { ApiRoute } from "../world.ts";

const COUNTRIES = [
  "Afghanistan",
  "Argentina",
  "Australia",
  "Austria",
  "Belgium",
  "Brazil",
  "Canada",
  "Chile",
  "China",
  "Denmark",
  "Finland",
  "France",
  "Germany",
  "Greece",
  "India",
  "Ireland",
  "Italy",
  "Japan",
  "Mexico",
  "Netherlands",
  "New Zealand",
  "Norway",
  "Poland",
  "Portugal",
  "South Korea",
  "Spain",
  "Sweden",
  "Switzerland",
  "United Kingdom",
  "United States",
];

const TEXT = (what: string) => `<h1>${what}</h1><p>This is the simulator's ${what.toLowerCase()}. It is not legal text.</p>`;

export const dataRoutes: ApiRoute[] = [
  { methods: ["GET", "POST"], template: "/placebo", scopes: [], handler: () => json(200, { status: "success" }) },
  {
    methods: ["GET"],
    template: "/data/countries",
    scopes: [],
    handler: () => json(200, { results: COUNTRIES.map((name, i) => ({ countryid: i + 1, name })) }),
  },
  { methods: ["GET"], template: "/data/privacy", scopes: [], handler: () => json(200, { text: TEXT("Privacy Policy") }) },
  { methods: ["GET"], template: "/data/submission", scopes: [], handler: () => json(200, { text: TEXT("Submission Policy") }) },
  { methods: ["GET"], template: "/data/tos", scopes: [], handler: () => json(200, { text: TEXT("Terms of Service") }) },
];
