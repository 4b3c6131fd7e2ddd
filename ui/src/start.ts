// Imported first by main.tsx, so this runs before React's modules are evaluated: the Jobs
// screen's first reads are on their way while React loads and renders (see opening.ts).
import { startOpening } from "./opening";

startOpening();
